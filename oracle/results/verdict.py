"""The verdict on one candidate of an ``OracleResult``: status, score, pass, a one-line reason.

A core reading of a result, shared by the framework adapters (``oracle.integrations``) and the
OpenTelemetry events (``oracle._telemetry``): both report one candidate's verdict and its rubric
criteria in the same terms, so it lives with the result types, below both.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from oracle.results.result import OracleResult, Status

SCORED = (Status.ok, Status.escalated)
"""Statuses that carry a score; every other one is unscored in a framework's terms."""
_REASON_CHARS = 300


@dataclass(frozen=True)
class Verdict:
    """The oracle's verdict on one candidate, in the terms adapters and telemetry report."""

    status: Status
    """The output's own status when the evaluation ran (a judge may leave one candidate unparsed),
    else the evaluation's."""
    score: float | None
    passed: bool | None
    reason: str
    """One line: which evaluator, what it found, and any escalation."""
    metadata: dict[str, Any] = field(default_factory=dict)
    """route (evaluator, confidence), status, escalation (id, reason, question, blocking), error."""

    @property
    def scored(self) -> bool:
        return self.status in SCORED and self.score is not None


def verdict(result: OracleResult, candidate_id: str | None) -> Verdict:
    """Read the verdict on candidate ``candidate_id`` from an ``OracleResult`` (None: the
    evaluation's own, when there is no candidate to read)."""
    evaluation = result.result
    candidate = evaluation.candidate(candidate_id) if evaluation is not None and candidate_id is not None \
        else None
    status = result.status
    if candidate is not None and result.status in SCORED:
        status = Status.escalated if result.status is Status.escalated and candidate.status is Status.ok \
            else candidate.status
    score = candidate.score if candidate is not None and status in SCORED else None
    passed = candidate.passed if candidate is not None and status in SCORED else None
    esc = result.escalation
    metadata: dict[str, Any] = {
        "route": {"evaluator": result.route.evaluator, "confidence": result.route.confidence},
        "status": status.value,
        "escalation": None if esc is None else {"id": esc.id, "reason": esc.reason, "question": esc.question,
                                                "blocking": esc.blocking, "answer": esc.answer},
        "error": None if evaluation is None or evaluation.error is None else evaluation.error.model_dump(),
        "task_id": result.task_id,
    }
    return Verdict(status=status, score=score, passed=passed, reason=_reason(result, candidate, status),
                   metadata=metadata)


def _reason(result: OracleResult, candidate: Any, status: Status) -> str:
    evaluation = result.result
    evaluator = result.route.evaluator or "no evaluator"
    if evaluation is None:
        found = "no feasible evaluator for this task"
    elif evaluation.error is not None:
        found = f"{evaluation.error.type}: {evaluation.error.message}"
    else:
        found = _candidate_summary(candidate) or evaluation.explanation or status.value
    line = f"{evaluator} {status.value}: {found}"
    if result.escalation is not None:
        line += f"; escalation {result.escalation.reason}: {result.escalation.question}"
    line = " ".join(line.split())
    return line if len(line) <= _REASON_CHARS else line[: _REASON_CHARS - 3] + "..."


def _candidate_summary(candidate: Any) -> str | None:
    if candidate is None:
        return None
    details = candidate.details
    tests = details.get("tests")
    if isinstance(tests, list) and tests:
        passed = sum(1 for t in tests if isinstance(t, dict) and t.get("outcome") == "pass")
        line = f"passed {passed}/{len(tests)} tests"
        first_bad = next((t for t in tests if isinstance(t, dict) and t.get("outcome") != "pass"), None)
        if first_bad is not None:
            line += (f"; {first_bad.get('name') or 'a test'} {first_bad.get('outcome')}: "
                     f"{first_bad.get('message') or ''}")
        return line.strip()
    if isinstance(details.get("message"), str):
        return str(details["message"])
    scores = criterion_scores(candidate)
    if scores:
        return "criteria " + ", ".join(f"{c.name[:40]}={_short(c.value)}" for c in scores[:6])
    if candidate.score is not None:
        return f"score {candidate.score:.3f}"
    return None


def _short(value: Any) -> str:
    return f"{value:.3g}" if isinstance(value, float) else str(value)


@dataclass(frozen=True)
class CriterionScore:
    """One rubric criterion's verdict on one candidate, the same shape for both judges."""

    id: str
    name: str
    """The criterion's text."""
    value: float | None
    """0..1: the LLM judge's normalized score or the decision judge's P(yes); None when refused."""
    met: bool | None
    status: str
    explanation: str | None


def criterion_scores(candidate: Any) -> list[CriterionScore]:
    """Per-criterion verdicts of a judged candidate (empty for the verifier).

    Read from the judges' evidence (``details["criteria"]``): the LLM judge keeps a mapping from
    criterion id to its scores and rationales, the decision judge a list of rows with P(yes). This
    is the one place that knows both shapes; a typed per-criterion field on the result would let
    it go.
    """
    criteria = candidate.details.get("criteria") if candidate is not None else None
    out: list[CriterionScore] = []
    if isinstance(criteria, dict):  # LLM judge: id -> {criterion, normalized, rationales}
        for cid, row in criteria.items():
            if not isinstance(row, dict):
                continue
            value = row.get("normalized")
            rationales = row.get("rationales") or []
            out.append(CriterionScore(id=str(cid), name=str(row.get("criterion") or cid),
                                      value=float(value) if isinstance(value, (int, float)) else None, met=None,
                                      status="ok" if isinstance(value, (int, float)) else "unscored",
                                      explanation=str(rationales[0]) if rationales else None))
    elif isinstance(criteria, list):  # decision judge: rows with criterion, probability, met
        for i, row in enumerate(criteria):
            if not isinstance(row, dict):
                continue
            p = row.get("probability")
            refused = bool(row.get("refused"))
            out.append(CriterionScore(id=str(row.get("question_id") or f"criterion{i}"),
                                      name=str(row.get("criterion") or f"criterion {i}"),
                                      value=float(p) if isinstance(p, (int, float)) else None,
                                      met=row.get("met") if isinstance(row.get("met"), bool) else None,
                                      status="abstained" if refused else ("ok" if p is not None else "unscored"),
                                      explanation=row.get("refusal_reason") or
                                      (f"P(yes) = {p:.3f}" if isinstance(p, (int, float)) else None)))
    return out


__all__ = ["SCORED", "CriterionScore", "Verdict", "criterion_scores", "verdict"]
