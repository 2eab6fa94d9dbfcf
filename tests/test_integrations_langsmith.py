"""LangSmith / openevals adapter: both calling conventions, langsmith's own Run/Example schemas and
its ``run_evaluator`` wrapper, offline (tracing off); real sandbox, scripted judge, refused endpoint."""

from __future__ import annotations

import uuid
from datetime import datetime, timezone

import pytest

from tests.integrations_support import require

require("langsmith")  # CI=true: a missing framework fails, never skips

from langsmith.evaluation.evaluator import run_evaluator  # noqa: E402
from langsmith.schemas import Example, Run  # noqa: E402

from oracle.errors import TaskValidationError  # noqa: E402
from oracle.integrations.langsmith import oracle_evaluator  # noqa: E402
from tests.integrations_support import (ADD_SPEC, BAD_ADD, GOOD_ADD, JUDGE_SPEC, judge_config,  # noqa: E402
                                        pointwise_json, refused_port)
from tests.plugins.scripted_server import chat_reply  # noqa: E402

pytestmark = [pytest.mark.sandbox, pytest.mark.slow]

ADD_PROMPT = "Write a Python function add(a, b) returning the sum."


@pytest.fixture(autouse=True)
def offline(monkeypatch):
    for name in ("LANGSMITH_TRACING", "LANGCHAIN_TRACING_V2", "LANGSMITH_API_KEY", "LANGCHAIN_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("LANGSMITH_TRACING", "false")


def run_and_example(inputs: dict, outputs: dict, reference: dict) -> tuple[Run, Example]:
    example = Example(id=uuid.uuid4(), dataset_id=uuid.uuid4(), inputs=inputs, outputs=reference,
                      created_at=datetime.now(timezone.utc))
    run = Run(id=uuid.uuid4(), name="target", run_type="chain", start_time=datetime.now(timezone.utc),
              inputs=inputs, outputs=outputs, reference_example_id=example.id, trace_id=uuid.uuid4())
    return run, example


def test_openevals_convention_verifier():
    evaluator = oracle_evaluator()
    good = evaluator(inputs={"prompt": ADD_PROMPT}, outputs={"output": GOOD_ADD},
                     reference_outputs={"oracle": ADD_SPEC})
    bad = evaluator(inputs={"prompt": ADD_PROMPT}, outputs={"output": BAD_ADD}, reference_outputs={"oracle": ADD_SPEC})
    assert set(good) == {"key", "score", "comment", "metadata"} and good["key"] == "oracle"
    assert good["score"] == 1.0 and bad["score"] == 0.0
    assert bad["comment"].startswith("verifier ok: passed 0/2 tests")
    assert bad["metadata"]["route"]["evaluator"] == "verifier" and bad["metadata"]["passed"] is False
    ref = evaluator(inputs={"question": "Capital of France?"}, outputs={"answer": "Lyon"},
                    reference_outputs={"answer": "Paris"})
    assert ref["score"] == 0.0 and ref["metadata"]["status"] == "ok"


def test_run_example_convention_through_langsmiths_wrapper():
    evaluator = oracle_evaluator(key="oracle_verdict")
    run, example = run_and_example({"prompt": ADD_PROMPT}, {"output": GOOD_ADD}, {"oracle": ADD_SPEC})
    direct = evaluator(run, example)
    assert direct["score"] == 1.0 and direct["metadata"]["task_id"] == str(example.id)
    result = run_evaluator(evaluator).evaluate_run(run, example)  # langsmith's own normalisation
    assert result.key == "oracle_verdict" and result.score == 1.0
    assert result.comment.startswith("verifier ok: passed 2/2 tests")
    assert result.metadata["route"]["evaluator"] == "verifier"


def test_failure_is_no_score_with_the_reason():
    evaluator = oracle_evaluator(judge_config(f"http://127.0.0.1:{refused_port()}/v1"))
    out = evaluator(inputs={"prompt": "Why is the sky blue?"}, outputs={"output": "Rayleigh scattering."},
                    reference_outputs={"oracle": JUDGE_SPEC})
    assert out["score"] is None and out["metadata"]["status"] == "failed"
    assert out["comment"].startswith("llm_judge failed: EndpointUnreachable")  # a refused loopback port


def test_judge_path_against_scripted_server(scripted_server):
    scripted_server.push(chat_reply(pointwise_json({"c1": 10, "c2": 4})))
    evaluator = oracle_evaluator(judge_config(scripted_server.base_url), task_defaults=JUDGE_SPEC)
    run, example = run_and_example({"question": "Why is the sky blue?"}, {"answer": "Rayleigh scattering."}, {})
    result = run_evaluator(evaluator).evaluate_run(run, example)
    assert result.score == pytest.approx((1 + 3 / 9) / 2) and result.comment.startswith("llm_judge ok")


def test_bad_spec_raises_naming_the_field():
    with pytest.raises(TaskValidationError, match="entry_pont"):
        oracle_evaluator()(inputs={"prompt": "x"}, outputs={"output": "y"},
                           reference_outputs={"oracle": {"entry_pont": "f"}})
