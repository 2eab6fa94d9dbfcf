"""What the router did over a results file: evaluators, confidence, fallbacks, policies, escalations.

Reads result rows as ``oracle batch`` writes them and ``oracle evaluate --json`` prints them (the
trace under ``result.route``; older ``evaluate`` rows had ``route`` at the top). A row without a
trace that names its evaluator (``evaluate --json -q``) counts for that evaluator only; one with
neither (invalid input, a crash) is counted as unrouted, never guessed at. A policy agrees with a route when the
evaluator that was chosen got the policy's highest score (ties included); abstentions are counted
apart and are not disagreements. Data here; the CLI lays it out (oracle/cli/render.py).
"""

from __future__ import annotations

from collections import Counter, defaultdict
from pathlib import Path
from typing import Any, Iterable, Iterator, Mapping

from pydantic import BaseModel, Field

from oracle.errors import TaskValidationError

CONFIDENCE_BINS = 10
"""Histogram bins of width 0.1 over [0, 1]; 1.0 falls in the last."""
NO_EVALUATOR = "(none)"


class PolicyAgreement(BaseModel):
    """How often one policy's top choice was the final route."""

    votes: int = 0
    agreed: int = 0
    abstained: int = 0
    agreement: float | None = None
    """agreed / votes; None when the policy never voted."""


class GroupRates(BaseModel):
    """Rows of one evaluator (or one escalation reason) and how many were low-confidence or escalated."""

    rows: int = 0
    low_confidence: int = 0
    escalated: int = 0
    low_confidence_rate: float | None = None
    escalation_rate: float | None = None


class RouteSummary(BaseModel):
    """The routing figures of a results file (see module docstring)."""

    rows: int = 0
    routed: int = 0
    """Rows that carry a route trace."""
    untraced: int = 0
    """Rows that name their evaluator but carry no trace (``oracle evaluate --json -q``): counted in
    ``evaluators``, not in the confidence, fallback, policy or rate figures (those need the trace)."""
    unrouted: int = 0
    evaluators: dict[str, int] = Field(default_factory=dict)
    """Final evaluator -> rows; ``(none)`` when no evaluator was feasible."""
    confidence_histogram: list[int] = Field(default_factory=lambda: [0] * CONFIDENCE_BINS)
    """Rows per confidence bin [0, 0.1), [0.1, 0.2) ... [0.9, 1.0]."""
    fallbacks: int = 0
    overrides: int = 0
    low_confidence: int = 0
    escalated: int = 0
    fallback_rate: float | None = None
    override_rate: float | None = None
    low_confidence_rate: float | None = None
    escalation_rate: float | None = None
    policies: dict[str, PolicyAgreement] = Field(default_factory=dict)
    by_evaluator: dict[str, GroupRates] = Field(default_factory=dict)
    by_escalation_reason: dict[str, GroupRates] = Field(default_factory=dict)
    history_snapshots: dict[str, int] = Field(default_factory=dict)
    """Routing-history snapshot hash -> rows routed with it (learning Oracles only)."""


def _rate(part: int, whole: int) -> float | None:
    return round(part / whole, 6) if whole else None


def trace_of(row: Mapping[str, Any]) -> tuple[Mapping[str, Any] | None, Mapping[str, Any] | None]:
    """(route, escalation) of a result row in either shape; route None when it has none."""
    inner = row.get("result") if isinstance(row.get("result"), Mapping) and "route" in row["result"] else None
    source = inner if inner is not None else row
    route = source.get("route")
    esc = source.get("escalation") or row.get("escalation")
    return (route if isinstance(route, Mapping) else None), (esc if isinstance(esc, Mapping) else None)


def _bin(confidence: float) -> int:
    return min(CONFIDENCE_BINS - 1, max(0, int(confidence * CONFIDENCE_BINS)))


def summarize_routes(rows: Iterable[Mapping[str, Any]]) -> RouteSummary:
    """The summary of ``rows`` (one pass; memory grows with the number of distinct names only)."""
    out = RouteSummary()
    evaluators: Counter[str] = Counter()
    policies: dict[str, PolicyAgreement] = defaultdict(PolicyAgreement)
    by_eval: dict[str, GroupRates] = defaultdict(GroupRates)
    by_reason: dict[str, GroupRates] = defaultdict(GroupRates)
    snapshots: Counter[str] = Counter()
    for row in rows:
        out.rows += 1
        route, esc = trace_of(row)
        if route is None:
            if isinstance(row.get("result"), Mapping) and "evaluator" in row:  # evaluated, trace left out
                out.untraced += 1
                evaluators[row["evaluator"] or NO_EVALUATOR] += 1
            else:
                out.unrouted += 1
            continue
        out.routed += 1
        chosen = route.get("evaluator")
        name = chosen or NO_EVALUATOR
        evaluators[name] += 1
        out.confidence_histogram[_bin(float(route.get("confidence") or 0.0))] += 1
        low, escalated = bool(route.get("low_confidence")), esc is not None
        out.fallbacks += route.get("fallback") is not None
        out.overrides += bool(route.get("override"))
        out.low_confidence += low
        out.escalated += escalated
        groups = [by_eval[name]] + ([by_reason[str(esc.get("reason"))]] if esc is not None else [])
        for group in groups:
            group.rows += 1
            group.low_confidence += low
            group.escalated += escalated
        for vote in route.get("votes") or []:
            scores = vote.get("scores") or {}
            stats = policies[str(vote.get("policy"))]
            stats.votes += 1
            if chosen is not None and scores and scores.get(chosen) == max(scores.values()):
                stats.agreed += 1
        for policy in route.get("abstained") or []:
            policies[str(policy)].abstained += 1
        snapshot = route.get("history_snapshot")
        if isinstance(snapshot, Mapping) and snapshot.get("hash"):
            snapshots[str(snapshot["hash"])] += 1
    routed = out.routed
    out.fallback_rate, out.override_rate = _rate(out.fallbacks, routed), _rate(out.overrides, routed)
    out.low_confidence_rate, out.escalation_rate = _rate(out.low_confidence, routed), _rate(out.escalated, routed)
    for stats in policies.values():
        stats.agreement = _rate(stats.agreed, stats.votes)
    for group in [*by_eval.values(), *by_reason.values()]:
        group.low_confidence_rate = _rate(group.low_confidence, group.rows)
        group.escalation_rate = _rate(group.escalated, group.rows)
    out.evaluators = dict(sorted(evaluators.items()))
    out.policies = dict(sorted(policies.items()))
    out.by_evaluator = dict(sorted(by_eval.items()))
    out.by_escalation_reason = dict(sorted(by_reason.items()))
    out.history_snapshots = dict(sorted(snapshots.items()))
    return out


def load_result_rows(path: str | Path) -> Iterator[dict[str, Any]]:
    """Result rows from a JSONL file, streamed. A line that is not a JSON object with a ``status``
    (a task line, say: the wrong file) is bad input naming its line."""
    from oracle.tasks._limits import DEFAULT_LIMITS
    from oracle.tasks.files import check_input_file, decode_json, read_lines

    checked = check_input_file(path)
    limit = DEFAULT_LIMITS.max_file_bytes
    with checked.open("rb") as fh:
        for number, raw, size, _ in read_lines(fh, limit, digest=False):
            if size > limit:
                raise TaskValidationError(f"results: line is {size} bytes, past limits.max_file_bytes",
                                          field="(line)", line=number, source=str(path))
            row = decode_json(raw, source=str(path), line=number)
            if not isinstance(row, dict) or "status" not in row:
                raise TaskValidationError("results: each line must be a result row (from oracle batch or "
                                          "oracle evaluate --json); this one has no status", field="(line)",
                                          line=number, source=str(path))
            yield row
