"""From read answers to candidate results, ranking and ``best``: the decision judge's bookkeeping.

Why ``best`` only holds passing candidates when a pass rule applies: the highest score among
candidates that all fail the rubric is the least bad answer, not a good one, and a caller taking
``best[0]`` would ship it. With a pass rule (criteria, questions, claim checks) ``best`` is the
highest-scoring passing candidates, empty when none passes; the ranking still orders everyone
scored. A comparison has no pass rule (``passed`` is None): there ``best`` is the top of the
comparison.
"""

from __future__ import annotations

from typing import Any, Sequence

from oracle.results.result import CandidateResult, Status
from oracle.strategies.decision_judge.readout import UnreadableAnswer
from oracle.strategies.decision_judge.scoring import AnswerVerdict, read_answer

TIE = 1e-12


def read_all(questions: Sequence[Any], got: Any, coverage_floor: float
             ) -> tuple[list[AnswerVerdict], dict[str, UnreadableAnswer]]:
    """Every answered question read; unreadable ones (from the backend or here) kept by id."""
    verdicts: list[AnswerVerdict] = []
    unreadable: dict[str, UnreadableAnswer] = dict(got.unreadable)
    for q in questions:
        if q.id in got.answers:
            try:
                verdicts.append(read_answer(q, got.answers[q.id], coverage_floor=coverage_floor))
            except UnreadableAnswer as exc:
                unreadable[q.id] = exc
    return verdicts, unreadable


def unreadable_details(unreadable: dict[str, UnreadableAnswer]) -> dict[str, dict[str, Any]]:
    return {k: {"reason": v.reason, "raw_text": v.raw_text, "covered_mass": v.covered_mass}
            for k, v in unreadable.items()}


def candidate_result(cid: str, verdicts: list[AnswerVerdict], unreadable: dict[str, UnreadableAnswer],
                     details: dict[str, Any], score: float | None, passed: bool | None) -> CandidateResult:
    """Candidate status and flags: unparsed beats abstained; a refusal or abstention is not a score."""
    refused = [v.question_id for v in verdicts if v.refused]
    abstained = [v.question_id for v in verdicts if v.abstained]
    low = [v.question_id for v in verdicts if v.low_confidence]
    details.update(refused=bool(refused), refused_questions=refused,
                   refusal_reasons={v.question_id: v.refusal_reason for v in verdicts if v.refused},
                   abstained=bool(abstained), abstained_questions=abstained,
                   low_confidence=bool(low), low_confidence_questions=low,
                   unparsed=bool(unreadable))
    if unreadable:
        return CandidateResult(id=cid, status=Status.unparsed, details=details)
    if score is None:
        return CandidateResult(id=cid, status=Status.abstained, details=details)
    return CandidateResult(id=cid, score=score, passed=passed, status=Status.ok, details=details)


def rank(candidates: Sequence[CandidateResult]) -> tuple[list[str], list[str], bool]:
    """(ranking by score, best, none_passed); see the module docstring for ``best``."""
    order = {c.id: i for i, c in enumerate(candidates)}
    scored = [c for c in candidates if c.score is not None]
    ranking = [c.id for c in sorted(scored, key=lambda c: (-(c.score or 0.0), order[c.id]))]
    judged = [c for c in scored if c.passed is not None]
    eligible = [c for c in judged if c.passed] if judged else scored
    top = max((c.score for c in eligible if c.score is not None), default=None)
    best = [c.id for c in eligible if top is not None and c.score is not None and c.score >= top - TIE]
    return ranking, best, bool(judged) and not any(c.passed for c in judged)


def explain(mode: str | None, candidates: Sequence[CandidateResult], threshold: dict[str, Any],
            none_passed: bool) -> str:
    parts = []
    for c in candidates:
        if c.score is None:
            parts.append(f"{c.id}: {c.status.value}")
        else:
            verdict = "" if c.passed is None else (" passed" if c.passed else " failed")
            parts.append(f"{c.id}: score {c.score:.3f}{verdict}")
    head = (f"decision judge ({mode}, threshold {threshold.get('pass_threshold')} from "
            f"{threshold.get('source')}): ")
    return head + ("no candidate passed; " if none_passed else "") + "; ".join(parts)
