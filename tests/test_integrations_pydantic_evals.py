"""pydantic-evals adapter: real ``Dataset.evaluate_sync`` reports, scored through the real sandbox,
the scripted judge server, and a refused endpoint (an EvaluatorFailure, never a score)."""

from __future__ import annotations

import pytest

from tests.integrations_support import require

require("pydantic_evals")  # CI=true: a missing framework fails, never skips

from pydantic_evals import Case, Dataset  # noqa: E402

from oracle.errors import TaskValidationError  # noqa: E402
from oracle.integrations.pydantic_evals import OracleEvaluator  # noqa: E402
from tests.integrations_support import JUDGE_SPEC, SAMPLES, judge_config, pointwise_json, refused_port  # noqa: E402
from tests.plugins.scripted_server import chat_reply  # noqa: E402

pytestmark = [pytest.mark.sandbox, pytest.mark.slow]

OUTPUTS = {f"{prompt} [{sid}]": out for sid, prompt, out, _, _ in SAMPLES}


async def answer(prompt: str | dict) -> str:
    """The function under evaluation: returns the scripted output for its prompt."""
    return OUTPUTS.get(prompt, "Rayleigh scattering.") if isinstance(prompt, str) else "Rayleigh scattering."


def cases() -> list[Case]:
    return [Case(name=sid, inputs=f"{prompt} [{sid}]", expected_output=ref,
                 metadata={"oracle": spec} if spec else None) for sid, prompt, _, ref, spec in SAMPLES]


def by_name(report):
    return {c.name: c for c in report.cases}


def test_report_has_named_results_with_reasons():
    report = Dataset(name="oracle-adapter", cases=cases(),
                     evaluators=[OracleEvaluator()]).evaluate_sync(answer, progress=False)
    rows = by_name(report)
    assert set(rows) == {"add_good", "add_bad", "capital", "capital_wrong"} and not report.failures
    good, bad = rows["add_good"], rows["add_bad"]
    assert good.scores["oracle_score"].value == 1.0 and good.assertions["oracle_passed"].value is True
    assert bad.scores["oracle_score"].value == 0.0 and bad.assertions["oracle_passed"].value is False
    assert bad.labels["oracle_status"].value == "ok"
    assert bad.scores["oracle_score"].reason.startswith("verifier ok: passed 0/2 tests; one_two fail")
    assert rows["capital"].scores["oracle_score"].value == 1.0
    assert rows["capital_wrong"].assertions["oracle_passed"].value is False
    assert "verifier ok" in rows["capital_wrong"].scores["oracle_score"].reason
    assert all(not c.evaluator_failures for c in report.cases)
    assert report.averages().scores["oracle_score"] == pytest.approx(0.5)


def test_our_failure_is_an_evaluator_failure_not_a_score():
    cfg = judge_config(f"http://127.0.0.1:{refused_port()}/v1")
    dataset = Dataset(name="oracle-adapter",
                      cases=[Case(name="judged", inputs="Why is the sky blue?", metadata={"oracle": JUDGE_SPEC})],
                      evaluators=[OracleEvaluator(config=cfg)])
    [case] = dataset.evaluate_sync(answer, progress=False).cases
    assert case.scores == {} and case.assertions == {} and case.labels == {}
    [failure] = case.evaluator_failures
    assert failure.error_type == "OracleEvaluationFailed"
    assert failure.source.arguments == (f"sha256:{cfg.hash()}",)  # named by its hash, not dumped whole
    assert failure.error_message.startswith("OracleEvaluationFailed: llm_judge failed: EndpointUnreachable")


def test_judge_path_against_scripted_server(scripted_server):
    scripted_server.push(chat_reply(pointwise_json({"c1": 10, "c2": 4})))
    evaluator = OracleEvaluator(config=judge_config(scripted_server.base_url), task_defaults=JUDGE_SPEC)
    dataset = Dataset(name="oracle-adapter", cases=[Case(name="judged", inputs={"question": "Why is the sky blue?"})],
                      evaluators=[evaluator])
    [case] = dataset.evaluate_sync(answer, progress=False).cases
    assert case.scores["oracle_score"].value == pytest.approx((1 + 3 / 9) / 2)
    assert case.scores["oracle_score"].reason.startswith("llm_judge ok")
    assert "oracle_passed" in case.assertions or case.labels["oracle_status"].value == "ok"
    [request] = scripted_server.requests
    assert "Why is the sky blue?" in str(request.json["messages"])


def test_unparsed_judge_reply_gives_status_only_no_score(scripted_server):
    scripted_server.push(chat_reply("seven out of ten"), chat_reply("still not JSON"))
    evaluator = OracleEvaluator(config=judge_config(scripted_server.base_url), task_defaults=JUDGE_SPEC)
    dataset = Dataset(name="oracle-adapter", cases=[Case(name="judged", inputs="Why is the sky blue?")],
                      evaluators=[evaluator])
    [case] = dataset.evaluate_sync(answer, progress=False).cases
    assert case.labels["oracle_status"].value == "unparsed"
    assert "oracle_score" not in case.scores and "oracle_passed" not in case.assertions


def test_bad_spec_names_the_field():
    evaluator = OracleEvaluator()
    dataset = Dataset(name="oracle-adapter",
                      cases=[Case(name="x", inputs="q", metadata={"oracle": {"tests": [{"kind": "nope"}]}})],
                      evaluators=[evaluator])
    [case] = dataset.evaluate_sync(answer, progress=False).cases
    [failure] = case.evaluator_failures
    assert failure.error_type == TaskValidationError.__name__ and "tests" in failure.error_message
