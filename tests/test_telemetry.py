"""OpenTelemetry: spans and gen_ai.evaluation.result events, read back with the SDK's in-memory
exporter; off (and OpenTelemetry not even imported) unless a tracer provider is configured."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests.integrations_support import require

require("opentelemetry.sdk")  # CI=true: a missing framework fails, never skips

from opentelemetry.sdk.trace import TracerProvider  # noqa: E402
from opentelemetry.sdk.trace.export import SimpleSpanProcessor  # noqa: E402
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter  # noqa: E402
from opentelemetry.trace import SpanKind, StatusCode  # noqa: E402

from oracle import Oracle  # noqa: E402
from oracle._telemetry import EVALUATION_EVENT, use_tracer_provider  # noqa: E402
from tests.integrations_support import (ADD_SPEC, BAD_ADD, CRITERIA, GOOD_ADD, JUDGE_SPEC, judge_config,  # noqa: E402
                                        pointwise_json, refused_port)
from tests.plugins.scripted_server import chat_reply  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture
def exporter():
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    with use_tracer_provider(provider):
        yield exporter
    provider.shutdown()


def spans_by_name(exporter):
    return {s.name: s for s in exporter.get_finished_spans()}


def events(span):
    return [dict(e.attributes) for e in span.events if e.name == EVALUATION_EVENT]


def add_task(*answers):
    return {"task": {"id": "add", "prompt": "Write add(a, b).", **ADD_SPEC},
            "trajectories": [{"id": f"c{i}", "answer": a} for i, a in enumerate(answers)]}


@pytest.mark.sandbox
def test_verifier_spans_nest_and_events_score_each_candidate(exporter):
    result = Oracle(judge_config(f"http://127.0.0.1:{refused_port()}/v1")).evaluate(add_task(GOOD_ADD, BAD_ADD))
    assert result.status.value == "ok"
    spans = spans_by_name(exporter)
    assert set(spans) == {"oracle.evaluate", "oracle.route", "oracle.evaluator verifier"}
    root, route, evaluator = spans["oracle.evaluate"], spans["oracle.route"], spans["oracle.evaluator verifier"]
    assert root.parent is None
    assert route.parent.span_id == root.context.span_id == evaluator.parent.span_id
    assert root.attributes["oracle.task.id"] == "add" and root.attributes["oracle.candidates"] == 2
    assert root.attributes["oracle.evaluator"] == "verifier" and root.attributes["oracle.status"] == "ok"
    assert route.attributes["oracle.route.evaluator"] == "verifier"
    assert evaluator.attributes["oracle.evaluator.calls"] == 4
    assert evaluator.attributes["oracle.isolation_level"] == result.result.provenance.isolation_level
    got = {e["oracle.candidate.id"]: e for e in events(root)}
    assert got["c0"]["gen_ai.evaluation.score.value"] == 1.0 and got["c0"]["gen_ai.evaluation.score.label"] == "pass"
    assert got["c1"]["gen_ai.evaluation.score.value"] == 0.0 and got["c1"]["gen_ai.evaluation.score.label"] == "fail"
    assert got["c1"]["gen_ai.evaluation.name"] == "oracle.verifier"
    assert got["c1"]["gen_ai.evaluation.explanation"].startswith("verifier ok: passed 0/2 tests")


def test_model_call_span_and_criterion_events_from_the_judge(exporter, scripted_server):
    scripted_server.push(chat_reply(pointwise_json({"c1": 10, "c2": 4}), model="scripted-answerer",
                                    prompt_tokens=37, completion_tokens=12))
    task = {"task": {"id": "sky", "prompt": "Why is the sky blue?", **JUDGE_SPEC},
            "trajectories": [{"id": "a", "answer": "Rayleigh scattering."}]}
    result = Oracle(judge_config(scripted_server.base_url)).evaluate(task)
    assert result.status.value == "ok"
    spans = spans_by_name(exporter)
    evaluator = spans["oracle.evaluator llm_judge"]
    call = spans["chat scripted-model"]
    assert call.kind is SpanKind.CLIENT and call.parent.span_id == evaluator.context.span_id
    attrs = call.attributes
    assert attrs["gen_ai.system"] == "openai" and attrs["gen_ai.operation.name"] == "chat"
    assert attrs["gen_ai.request.model"] == "scripted-model"
    assert attrs["gen_ai.response.model"] == "scripted-answerer"
    assert attrs["gen_ai.usage.input_tokens"] == 37 and attrs["gen_ai.usage.output_tokens"] == 12
    assert attrs["server.address"] == "127.0.0.1" and attrs["server.port"] == scripted_server.port
    record = result.result.provenance.calls[0]
    assert (call.end_time - call.start_time) == pytest.approx(record.latency_ms * 1e6, abs=1000)
    evs = events(spans["oracle.evaluate"])
    assert len(evs) == 3  # the candidate, then each criterion
    assert evs[0]["gen_ai.evaluation.name"] == "oracle.llm_judge"
    assert evs[0]["gen_ai.evaluation.score.value"] == pytest.approx((1 + 3 / 9) / 2)
    by_name = {e["gen_ai.evaluation.name"]: e for e in evs[1:]}
    assert by_name[CRITERIA[0]]["gen_ai.evaluation.score.value"] == 1.0
    assert by_name[CRITERIA[1]]["gen_ai.evaluation.score.value"] == pytest.approx(3 / 9)
    assert by_name[CRITERIA[1]]["gen_ai.evaluation.explanation"] == "because c2"


def test_failure_is_an_error_span_and_an_unscored_event(exporter):
    task = {"task": {"id": "sky", "prompt": "Why is the sky blue?", **JUDGE_SPEC},
            "trajectories": [{"id": "a", "answer": "Rayleigh scattering."}]}
    result = Oracle(judge_config(f"http://127.0.0.1:{refused_port()}/v1")).evaluate(task)
    assert result.status.value == "failed"
    spans = spans_by_name(exporter)
    root = spans["oracle.evaluate"]
    assert root.status.status_code is StatusCode.ERROR
    failed_calls = [s for s in exporter.get_finished_spans() if s.name.startswith("call ")]
    assert failed_calls and failed_calls[0].attributes["error.type"] == "EndpointUnreachable"  # refused, at once
    assert failed_calls[0].status.status_code is StatusCode.ERROR
    [event] = events(root)
    assert "gen_ai.evaluation.score.value" not in event  # never a number for a failure
    assert event["gen_ai.evaluation.score.label"] == "failed" and event["error.type"]


def test_use_tracer_provider_none_turns_tracing_off(exporter):
    with use_tracer_provider(None):
        Oracle().route({"task": {"id": "q", "prompt": "2+2?", "reference": "4"},
                        "trajectories": [{"id": "a", "answer": "4"}]})
    assert exporter.get_finished_spans() == ()


def run_python(code: str) -> dict:
    proc = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], cwd=ROOT, capture_output=True, text=True,
                          timeout=120, env={"PATH": "/usr/bin:/bin", "HOME": str(ROOT), "PYTHONPATH": str(ROOT)})
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1])


@pytest.mark.slow
@pytest.mark.sandbox
def test_off_by_default_and_opentelemetry_never_imported():
    out = run_python("""
        import json, sys
        from oracle import Oracle
        r = Oracle().evaluate({"task": {"id": "q", "prompt": "Capital of France?", "reference": "Paris"},
                               "trajectories": [{"id": "a", "answer": "Paris"}]})
        print(json.dumps({"status": r.status.value,
                          "otel": sorted(m for m in sys.modules if m.startswith("opentelemetry"))}))
    """)
    assert out == {"status": "ok", "otel": []}


@pytest.mark.slow
@pytest.mark.sandbox
def test_a_globally_configured_provider_turns_it_on():
    out = run_python("""
        import json
        from opentelemetry import trace
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import SimpleSpanProcessor
        from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
        from oracle import Oracle
        task = {"task": {"id": "q", "prompt": "Capital of France?", "reference": "Paris"},
                "trajectories": [{"id": "a", "answer": "Paris"}]}
        from oracle._telemetry import active_provider
        Oracle().evaluate(task)
        off_before = active_provider() is None   # the API imported, no provider set: still off
        exporter = InMemorySpanExporter()
        provider = TracerProvider()
        provider.add_span_processor(SimpleSpanProcessor(exporter))
        trace.set_tracer_provider(provider)
        Oracle().evaluate(task)
        print(json.dumps({"off_before": off_before, "after": sorted(s.name for s in exporter.get_finished_spans())}))
    """)
    assert out == {"off_before": True, "after": ["oracle.evaluate", "oracle.evaluator verifier", "oracle.route"]}


def test_decision_judge_criteria_events_and_decision_call_span(exporter, scripted_server):
    """The decision judge's criteria (P(yes) per criterion) become events; its call is a span too."""
    from oracle.config.model import OracleConfig, ProvidersConfig
    from tests.plugins.scripted_server import decision_handler

    scripted_server.set_handler(decision_handler(probabilities={"criterion_0": 0.9, "criterion_1": 0.2}))
    cfg = OracleConfig(providers=ProvidersConfig(
        judge=scripted_server.provider_settings(kind="openai"),
        decision=scripted_server.provider_settings(kind="systemone", model="scripted-decider")))
    task = {"task": {"id": "refund", "prompt": "Customer: I was charged twice.", "evaluator": "decision_judge",
                     "criteria": ["asks for the order number", "apologizes"]},
            "trajectories": [{"id": "a", "answer": "Sorry! What is your order number?"}]}
    result = Oracle(cfg).evaluate(task)
    assert result.status.value == "ok", result.result.error
    spans = spans_by_name(exporter)
    call = spans["decide scripted-decider"]
    assert call.attributes["gen_ai.system"] == "systemone"
    assert call.attributes["oracle.call.probability_source"] == "native_decision"
    assert call.parent.span_id == spans["oracle.evaluator decision_judge"].context.span_id
    evs = events(spans["oracle.evaluate"])
    assert evs[0]["gen_ai.evaluation.name"] == "oracle.decision_judge"
    assert evs[0]["gen_ai.evaluation.score.label"] == "fail"  # one criterion below the pass threshold
    criteria = {e["gen_ai.evaluation.name"]: e for e in evs[1:]}
    assert criteria["asks for the order number"]["gen_ai.evaluation.score.value"] == pytest.approx(0.9)
    assert criteria["asks for the order number"]["gen_ai.evaluation.score.label"] == "pass"
    assert criteria["apologizes"]["gen_ai.evaluation.score.value"] == pytest.approx(0.2)
    assert criteria["apologizes"]["gen_ai.evaluation.score.label"] == "fail"


@pytest.mark.local_model
@pytest.mark.slow
def test_model_call_spans_against_the_embedded_local_model(exporter, local_model):
    """Real tokens from the real llama.cpp server land on the call spans (whatever the verdict)."""
    from oracle.config.model import OracleConfig

    cfg = OracleConfig(providers={"judge": local_model.provider_settings(timeout_s=600)},
                       llm_judge={"mode": "pointwise", "repeats": 1})
    task = {"task": {"id": "sky", "prompt": "Why is the sky blue?", "evaluator": "llm_judge",
                     "criteria": ["Mentions Rayleigh scattering"]},
            "trajectories": [{"id": "a", "answer": "Rayleigh scattering of sunlight by air molecules."}]}
    result = Oracle(cfg).evaluate(task)
    records = result.result.provenance.calls
    assert records, result.result.error
    calls = [s for s in exporter.get_finished_spans() if s.name == f"chat {local_model.model}"]
    assert len(calls) == len(records)
    for span, record in zip(calls, records):
        assert span.attributes["gen_ai.request.model"] == local_model.model
        assert span.attributes["gen_ai.response.model"] == record.model_answered
        assert span.attributes["gen_ai.usage.input_tokens"] == record.input_tokens > 0
        assert span.attributes["gen_ai.usage.output_tokens"] == record.output_tokens > 0
    [root] = [s for s in exporter.get_finished_spans() if s.name == "oracle.evaluate"]
    assert events(root)[0]["gen_ai.evaluation.name"] == "oracle.llm_judge"
