"""Inspect AI adapter: a real ``inspect_ai.eval`` run with Inspect's mockllm model (no network),
the oracle scoring through the real sandbox, the scripted judge server, and a refused endpoint."""

from __future__ import annotations

import math

import pytest

from tests.integrations_support import require

require("inspect_ai")  # CI=true: a missing framework fails, never skips

from inspect_ai import Task, eval as inspect_eval  # noqa: E402
from inspect_ai.dataset import Sample  # noqa: E402
from inspect_ai.model import ModelOutput, ModelUsage, get_model  # noqa: E402
from inspect_ai.solver import generate  # noqa: E402

from oracle.integrations.inspect import oracle_scorer  # noqa: E402
from tests.integrations_support import (CRITERIA, JUDGE_SPEC, SAMPLES, judge_config,  # noqa: E402
                                        pointwise_json, refused_port)
from tests.plugins.scripted_server import chat_reply  # noqa: E402

pytestmark = [pytest.mark.sandbox, pytest.mark.slow]


def mock_model(answers: dict[str, str]):
    """Inspect's mockllm answering each prompt with its scripted output (order-independent)."""

    def reply(messages, tools, tool_choice, config):
        prompt = messages[-1].text
        output = ModelOutput.from_content(model="mockllm/model", content=answers[prompt])
        # Usage given, so mockllm does not count tokens with tiktoken (which would download its tables).
        output.usage = ModelUsage(input_tokens=len(prompt.split()), output_tokens=len(output.completion.split()),
                                  total_tokens=len(prompt.split()) + len(output.completion.split()))
        return output

    return get_model("mockllm/model", custom_outputs=reply)


def run(samples: list[Sample], answers: dict[str, str], scorer, tmp_path):
    task = Task(dataset=samples, solver=generate(), scorer=scorer)
    [log] = inspect_eval(task, model=mock_model(answers), log_dir=str(tmp_path), display="none",
                         max_samples=2)
    assert log.status == "success", log.error
    return log, {s.id: s.scores["oracle_scorer"] for s in log.samples}


def sample(sid: str, prompt: str, reference: str | None, spec: dict | None) -> Sample:
    return Sample(id=sid, input=prompt, target=reference or "", metadata={"oracle": spec} if spec else {})


def test_verifier_samples_scored_with_reasons_and_route(tmp_path):
    samples = [sample(sid, f"{prompt} [{sid}]", ref, spec) for sid, prompt, _, ref, spec in SAMPLES]
    answers = {f"{prompt} [{sid}]": out for sid, prompt, out, _, _ in SAMPLES}
    log, scores = run(samples, answers, oracle_scorer(), tmp_path)
    assert scores["add_good"].value == 1.0 and scores["add_bad"].value == 0.0
    assert scores["capital"].value == 1.0 and scores["capital_wrong"].value == 0.0
    bad = scores["add_bad"]
    assert bad.explanation.startswith("verifier ok: passed 0/2 tests; one_two fail")
    assert bad.answer == answers["Write a Python function add(a, b) returning the sum. [add_bad]"]
    assert bad.metadata["route"]["evaluator"] == "verifier" and bad.metadata["status"] == "ok"
    assert bad.metadata["passed"] is False and "escalation" in bad.metadata
    assert scores["capital"].metadata["route"]["evaluator"] == "verifier"
    [metric_scores] = log.results.scores
    assert metric_scores.metrics["mean"].value == pytest.approx(0.5)


def test_infrastructure_failure_is_unscored_and_skipped_by_metrics(tmp_path):
    """A refused judge endpoint is our failure: Score.unscored, never a 0, and the mean ignores it."""
    cfg = judge_config(f"http://127.0.0.1:{refused_port()}/v1")
    sid, prompt, out, ref, spec = SAMPLES[0]
    samples = [sample(sid, prompt, ref, spec),
               sample("judged", "Why is the sky blue?", None, JUDGE_SPEC)]
    answers = {prompt: out, "Why is the sky blue?": "Rayleigh scattering."}
    log, scores = run(samples, answers, oracle_scorer(cfg), tmp_path)
    failed = scores["judged"]
    assert math.isnan(failed.value) and failed.reason == "scoring_failed"
    assert failed.metadata["status"] == "failed" and failed.metadata["route"]["evaluator"] == "llm_judge"
    assert "llm_judge failed" in failed.explanation and failed.metadata["error"]["type"]
    assert scores["add_good"].value == 1.0
    assert log.results.scores[0].metrics["mean"].value == pytest.approx(1.0)  # the unscored one is skipped


def test_judge_path_against_scripted_server(scripted_server, tmp_path):
    scripted_server.push(chat_reply(pointwise_json({"c1": 10, "c2": 4})))
    cfg = judge_config(scripted_server.base_url)
    log, scores = run([sample("judged", "Why is the sky blue?", None, None)],
                      {"Why is the sky blue?": "Rayleigh scattering."},
                      oracle_scorer(cfg, task_defaults=JUDGE_SPEC), tmp_path)
    score = scores["judged"]
    # criteria weights 1, 1 on the 1..10 scale: (9/9 + 3/9) / 2
    assert score.value == pytest.approx((1 + 3 / 9) / 2)
    assert score.metadata["route"]["evaluator"] == "llm_judge" and score.metadata["status"] == "ok"
    assert "llm_judge ok" in score.explanation
    [request] = scripted_server.requests
    user = [m["content"] for m in request.json["messages"] if m["role"] == "user"][0]
    assert CRITERIA[0] in user and "Rayleigh scattering." in user


def test_bad_spec_is_a_sample_error_naming_the_field(tmp_path):
    task = Task(dataset=[Sample(id="x", input="q", metadata={"oracle": {"testz": []}})], solver=generate(),
                scorer=oracle_scorer())
    [log] = inspect_eval(task, model=mock_model({"q": "a"}), log_dir=str(tmp_path), display="none")
    assert log.status == "error"
    assert "testz" in str(log.error) or "testz" in str(log.samples[0].error if log.samples else "")
