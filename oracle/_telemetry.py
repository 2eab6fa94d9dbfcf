"""OpenTelemetry tracing of evaluations: spans for the evaluation, the route, the evaluator and each
model call, and one ``gen_ai.evaluation.result`` event per candidate and criterion.

Off unless a tracer provider is configured, and then free: while nothing has imported
``opentelemetry.trace`` (and ``OTEL_PYTHON_TRACER_PROVIDER`` is unset) nobody can have configured
one, so this module does not import OpenTelemetry at all and every hook is a shared no-op object.
Only the OpenTelemetry *API* is used at run time (extra ``otel``); the SDK and exporters are the
application's choice. ``use_tracer_provider(provider)`` scopes a provider to a context (tests, or
one Oracle among several) without touching the global one; ``use_tracer_provider(None)`` turns
tracing off in that context.

Spans (names have low cardinality; details are attributes):

    oracle.evaluate                 oracle.task.id, oracle.candidates, oracle.status, oracle.evaluator,
    │                               oracle.route.confidence, oracle.escalation.reason; ERROR status
    │                               when the evaluation failed; the gen_ai.evaluation.result events
    ├── oracle.route                oracle.route.evaluator/confidence/margin/runner_up/low_confidence
    └── oracle.evaluator {kind}     oracle.evaluator.name/status/calls, oracle.cost_usd, isolation
        └── {operation} {model}     one CLIENT span per model call: gen_ai.operation.name,
                                    gen_ai.system (and gen_ai.provider.name), gen_ai.request.model,
                                    gen_ai.response.model, gen_ai.usage.input_tokens/output_tokens,
                                    gen_ai.response.id, server.address/port, oracle.call.*

Model-call spans are built from the evaluator's typed call ledger (``provenance.calls``) when it
returns, not inside the providers: the ledger records each call's duration, not its start, so a
call span starts with its evaluator span and lasts the call's measured latency. Calls that failed
after their retries become zero-length spans with ERROR status and ``error.type``.

Events (``gen_ai.evaluation.result``, on the evaluation span): one per candidate with
``gen_ai.evaluation.name`` ``oracle.{evaluator}``, and one per rubric criterion of a judged
candidate with the criterion's text as the name. ``gen_ai.evaluation.score.value`` is the 0..1
score (a criterion's normalized score or P(yes)), ``gen_ai.evaluation.score.label`` is ``pass`` /
``fail`` (or ``ok`` where there is no pass rule), ``gen_ai.evaluation.explanation`` the one-line
reason. A candidate that was not scored gets an event with its status as the label, no value and,
when our side failed, ``error.type``: a failure is reported, never given a number.
"""

from __future__ import annotations

import os
import sys
import time
from contextvars import ContextVar
from types import TracebackType
from typing import TYPE_CHECKING, Any, Iterator
from urllib.parse import urlsplit

if TYPE_CHECKING:
    from oracle.results.provenance import CallRecord
    from oracle.results.result import EvaluationResult, OracleResult
    from oracle.routing.route import Route
    from oracle.tasks.task import TaskInput

INSTRUMENTATION_NAME = "oracle-router"
EVALUATION_EVENT = "gen_ai.evaluation.result"
_UNSET: Any = object()
_PROVIDER: ContextVar[Any] = ContextVar("oracle_tracer_provider", default=_UNSET)
_SYSTEMS = {"openai_chat": "openai", "anthropic_messages": "anthropic"}
_OPERATIONS = {"openai_chat": "chat", "anthropic_messages": "chat"}
_SAMPLING = {"temperature": "gen_ai.request.temperature", "top_p": "gen_ai.request.top_p",
             "seed": "gen_ai.request.seed", "max_tokens": "gen_ai.request.max_tokens"}
_NAME_CHARS = 128


def active_provider() -> Any:
    """The tracer provider in force here, or None when tracing is off (see the module docstring)."""
    scoped = _PROVIDER.get()
    if scoped is not _UNSET:
        return scoped
    trace: Any = sys.modules.get("opentelemetry.trace")
    if trace is None:
        if not os.environ.get("OTEL_PYTHON_TRACER_PROVIDER"):
            return None
        import opentelemetry.trace

        trace = opentelemetry.trace
    provider = trace.get_tracer_provider()
    if isinstance(provider, (trace.ProxyTracerProvider, trace.NoOpTracerProvider)):
        return None
    return provider


class use_tracer_provider:
    """``with use_tracer_provider(provider): ...``: evaluations in this context (and the tasks it
    starts) trace to ``provider``; None turns tracing off here. The global provider is untouched."""

    def __init__(self, provider: Any) -> None:
        self.provider = provider
        self._token: Any = None

    def __enter__(self) -> Any:
        self._token = _PROVIDER.set(self.provider)
        return self.provider

    def __exit__(self, *exc: object) -> None:
        _PROVIDER.reset(self._token)


def _tracer() -> Any:
    provider = active_provider()
    if provider is None:
        return None
    from oracle._internal.version import __version__

    return provider.get_tracer(INSTRUMENTATION_NAME, __version__)


class _Off:
    """The hook when tracing is off: a context manager whose ``finish`` hands its argument back."""

    def __enter__(self) -> "_Off":
        return self

    def __exit__(self, *exc: object) -> None:
        return None

    def finish(self, value: Any) -> Any:
        return value


_OFF = _Off()


class _Span:
    """One live span, current while its ``with`` block runs."""

    def __init__(self, tracer: Any, name: str, attributes: dict[str, Any]) -> None:
        self.tracer = tracer
        self._cm = tracer.start_as_current_span(name, attributes=_clean(attributes))
        self.span: Any = None
        self.start_ns = 0

    def __enter__(self) -> Any:
        self.start_ns = time.time_ns()
        self.span = self._cm.__enter__()
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self._cm.__exit__(exc_type, exc, tb)


class _EvaluationSpan(_Span):
    def finish(self, result: "OracleResult") -> "OracleResult":
        evaluation = result.result
        self.span.set_attributes(_clean({
            "oracle.status": result.status.value, "oracle.evaluator": result.route.evaluator,
            "oracle.route.confidence": result.route.confidence,
            "oracle.escalation.reason": result.escalation.reason if result.escalation else None,
            "oracle.escalation.blocking": result.escalation.blocking if result.escalation else None,
            "oracle.calls": evaluation.calls if evaluation else None,
            "oracle.cost_usd": evaluation.cost_usd if evaluation else None,
            "oracle.latency_ms": evaluation.latency_ms if evaluation else None}))
        for name, attributes in evaluation_events(result):
            self.span.add_event(name, attributes)
        if result.status.value == "failed":
            from opentelemetry.trace import Status, StatusCode

            message = evaluation.error.message if evaluation and evaluation.error else "no feasible evaluator"
            self.span.set_status(Status(StatusCode.ERROR, message[:500]))
        return result


class _RouteSpan(_Span):
    def finish(self, route: "Route") -> "Route":
        self.span.set_attributes(_clean({
            "oracle.route.evaluator": route.evaluator, "oracle.route.confidence": route.confidence,
            "oracle.route.margin": route.margin, "oracle.route.runner_up": route.runner_up,
            "oracle.route.low_confidence": route.low_confidence, "oracle.route.fallback": route.fallback,
            "oracle.route.override": route.override}))
        return route


class _EvaluatorSpan(_Span):
    def finish(self, result: "EvaluationResult") -> "EvaluationResult":
        prov = result.provenance
        self.span.set_attributes(_clean({
            "oracle.evaluator.name": result.evaluator, "oracle.evaluator.status": result.status.value,
            "oracle.evaluator.calls": result.calls, "oracle.cost_usd": result.cost_usd,
            "oracle.latency_ms": result.latency_ms, "oracle.evaluator.mode": prov.mode,
            "oracle.isolation_level": prov.isolation_level, "oracle.integrity": prov.integrity,
            "error.type": result.error.type if result.error else None}))
        for record in prov.calls:
            self._call_span(record)
        for failed in prov.failed_calls:
            self._failed_call_span(failed.error, failed.attempts, prov.model_requested, prov.base_url)
        if result.error is not None:
            from opentelemetry.trace import Status, StatusCode

            self.span.set_status(Status(StatusCode.ERROR, result.error.message[:500]))
        return result

    def _child(self, name: str, attributes: dict[str, Any], start_ns: int) -> Any:
        from opentelemetry.trace import SpanKind, set_span_in_context

        return self.tracer.start_span(name, context=set_span_in_context(self.span), kind=SpanKind.CLIENT,
                                      attributes=_clean(attributes), start_time=start_ns)

    def _call_span(self, record: "CallRecord") -> None:
        span = self._child(f"{_operation(record.endpoint_kind)} {record.model_requested}",
                           call_attributes(record), self.start_ns)
        span.end(end_time=self.start_ns + int(record.latency_ms * 1e6))

    def _failed_call_span(self, error: str, attempts: int, model: str | None, base_url: str | None) -> None:
        from opentelemetry.trace import Status, StatusCode

        now = time.time_ns()
        attributes: dict[str, Any] = {"error.type": error, "oracle.call.attempts": attempts,
                                      "gen_ai.request.model": model, **_server(base_url)}
        span = self._child(f"call {model or 'unknown'}", attributes, now)
        span.set_status(Status(StatusCode.ERROR, error))
        span.end(end_time=now)


def evaluation_span(item: "TaskInput") -> Any:
    """Hook around one evaluation (route, evaluator, escalation); ``finish(result)`` records it."""
    tracer = _tracer()
    if tracer is None:
        return _OFF
    return _EvaluationSpan(tracer, "oracle.evaluate", {"oracle.task.id": item.task.id,
                                                       "oracle.candidates": len(item.trajectories)})


def route_span() -> Any:
    """Hook around routing; ``finish(route)`` records the decision."""
    tracer = _tracer()
    return _OFF if tracer is None else _RouteSpan(tracer, "oracle.route", {})


def evaluator_span(kind: str) -> Any:
    """Hook around one evaluator run; ``finish(result)`` records it and its model calls."""
    tracer = _tracer()
    if tracer is None:
        return _OFF
    return _EvaluatorSpan(tracer, f"oracle.evaluator {kind}", {"oracle.evaluator.name": kind})


def call_attributes(record: "CallRecord") -> dict[str, Any]:
    """The gen_ai.* (and oracle.call.*) attributes of one model call."""
    system = _SYSTEMS.get(record.endpoint_kind, record.endpoint_kind)
    attributes: dict[str, Any] = {
        "gen_ai.operation.name": _operation(record.endpoint_kind), "gen_ai.system": system,
        "gen_ai.provider.name": system, "gen_ai.request.model": record.model_requested,
        "gen_ai.response.model": record.model_answered, "gen_ai.response.id": record.call_id,
        "gen_ai.usage.input_tokens": record.input_tokens, "gen_ai.usage.output_tokens": record.output_tokens,
        "oracle.call.endpoint_kind": record.endpoint_kind,
        "oracle.call.probability_source": record.probability_source,
        "oracle.call.latency_ms": record.latency_ms, "oracle.call.attempts": record.attempts,
        "oracle.call.cached": record.cached, "oracle.call.repair": record.repair,
        "oracle.call.cost_usd": record.cost_usd, **_server(record.base_url)}
    for key, attribute in _SAMPLING.items():
        attributes[attribute] = record.sampling_requested.get(key)
    return attributes


def evaluation_events(result: "OracleResult") -> Iterator[tuple[str, dict[str, Any]]]:
    """The ``gen_ai.evaluation.result`` events of one result (see the module docstring)."""
    from oracle.results.verdict import criterion_scores, verdict

    evaluation = result.result
    evaluator = result.route.evaluator or "none"
    common: dict[str, Any] = {"oracle.task.id": result.task_id, "oracle.evaluator": evaluator}
    if evaluation is None or not evaluation.candidates:
        error: str | None = None
        if evaluation is None:
            error = "NoFeasibleEvaluator"
        elif evaluation.error is not None:
            error = evaluation.error.type
        v = verdict(result, None)
        yield EVALUATION_EVENT, _clean({**common, "gen_ai.evaluation.name": f"oracle.{evaluator}",
                                        "gen_ai.evaluation.score.label": result.status.value,
                                        "gen_ai.evaluation.explanation": v.reason, "error.type": error})
        return
    for candidate in evaluation.candidates:
        v = verdict(result, candidate.id)
        attributes: dict[str, Any] = {**common, "oracle.candidate.id": candidate.id,
                      "gen_ai.evaluation.name": f"oracle.{evaluator}",
                      "gen_ai.evaluation.explanation": v.reason}
        if v.scored:
            attributes["gen_ai.evaluation.score.value"] = v.score
            attributes["gen_ai.evaluation.score.label"] = _label(v.passed)
        else:
            attributes["gen_ai.evaluation.score.label"] = v.status.value
            if evaluation.error is not None:
                attributes["error.type"] = evaluation.error.type
        yield EVALUATION_EVENT, _clean(attributes)
        for c in criterion_scores(candidate):
            yield EVALUATION_EVENT, _clean({
                **common, "oracle.candidate.id": candidate.id, "oracle.criterion.id": c.id,
                "gen_ai.evaluation.name": c.name[:_NAME_CHARS],
                "gen_ai.evaluation.score.value": c.value,
                "gen_ai.evaluation.score.label": _label(c.met) if c.value is not None else c.status,
                "gen_ai.evaluation.explanation": c.explanation})


def _label(passed: bool | None) -> str:
    return "ok" if passed is None else ("pass" if passed else "fail")


def _operation(endpoint_kind: str) -> str:
    return _OPERATIONS.get(endpoint_kind, "decide")


def _server(base_url: str | None) -> dict[str, Any]:
    if not base_url:
        return {}
    parts = urlsplit(base_url)
    return {"server.address": parts.hostname, "server.port": parts.port}


def _clean(attributes: dict[str, Any]) -> dict[str, Any]:
    """OpenTelemetry attributes take no None; drop those."""
    return {k: v for k, v in attributes.items() if v is not None}


__all__ = ["EVALUATION_EVENT", "active_provider", "call_attributes", "evaluation_events", "evaluation_span",
           "evaluator_span", "route_span", "use_tracer_provider"]
