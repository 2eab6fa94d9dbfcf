"""A panel's answers to one question, combined into one answer: the mean of the members'
probabilities, or the label most of them pick.

Why the combined answer is an ordinary ``DecisionAnswer``: everything after it (the pass rule,
calibrated thresholds, confidence, abstention, concerns) then treats a panel exactly as one
judge, and a panel changes no rule. What a single judge could not show is kept beside it, per
question: each member's own distribution and label, the spread (highest minus lowest member
probability of the label the panel chose) and the agreement (the share of answering members that
chose it).

Rules, never a guess:

- a member whose call failed, whose answer could not be read, or that refused, is left out of the
  combination and reported with its reason;
- ``mean``: the label-wise mean over the members that answered;
- ``majority``: each answering member's most likely label; the label most of them pick wins, and
  its probabilities are the mean over the members that picked it (so the threshold still reads how
  sure they were). Two or more labels with the most votes (no majority) is ``unparsed``;
- no member answered: ``unparsed``; unless every member that replied refused, which is the
  panel's refusal (as a single judge's refusal is).

Pure: no I/O, the same votes give the same answer.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal, Sequence

from oracle.providers.types import DecisionAnswer
from oracle.tasks.questions import Question
from oracle.strategies.decision_judge.readout import UnreadableAnswer
from oracle.strategies.decision_judge.scoring import AnswerVerdict, read_answer

Aggregate = Literal["mean", "majority"]
VoteStatus = Literal["answered", "refused", "unparsed", "failed"]

_TIE = 1e-12


@dataclass(frozen=True)
class MemberVote:
    """One member's answer to one question, read by the single-judge rules (coverage floor, labels)."""

    member: str
    status: VoteStatus
    verdict: AnswerVerdict | None = None
    reason: str | None = None
    """Why it was left out: the refusal, the unreadable answer, the failed call."""
    error: dict[str, Any] | None = None

    def to_details(self) -> dict[str, Any]:
        row: dict[str, Any] = {"status": self.status}
        v = self.verdict
        if v is not None and self.status == "answered":
            row.update(label=v.selected, probabilities=v.probabilities, confidence=v.confidence,
                       probability_source=v.probability_source, covered_mass=v.covered_mass)
        if self.reason is not None:
            row["reason"] = self.reason
        if self.error is not None:
            row["error"] = self.error
        return row


def member_vote(question: Question, member: str, answer: DecisionAnswer | None,
                unreadable: UnreadableAnswer | None, *, coverage_floor: float,
                error: dict[str, Any] | None = None) -> MemberVote:
    """What one member said about ``question``: an answer, a refusal, or why there is none."""
    if error is not None:
        return MemberVote(member, "failed", reason=str(error.get("message")), error=error)
    if answer is None:
        return MemberVote(member, "unparsed", reason=unreadable.reason if unreadable else "no answer")
    try:
        verdict = read_answer(question, answer, coverage_floor=coverage_floor)
    except UnreadableAnswer as exc:
        return MemberVote(member, "unparsed", reason=exc.reason)
    if verdict.refused:
        return MemberVote(member, "refused", verdict=verdict, reason=verdict.refusal_reason)
    return MemberVote(member, "answered", verdict=verdict)


@dataclass(frozen=True)
class PanelAnswer:
    """The panel's answer to one question (or why there is none) and how the members split."""

    answer: DecisionAnswer | None
    unreadable: UnreadableAnswer | None
    details: dict[str, Any]


def _mean(rows: Sequence[dict[str, float]], labels: Sequence[str]) -> dict[str, float]:
    return {label: sum(r[label] for r in rows) / len(rows) for label in labels}


def _top(probabilities: dict[str, float], labels: Sequence[str]) -> str:
    best = max(probabilities.values())
    return next(label for label in labels if probabilities[label] >= best - _TIE)


def _covered(votes: Sequence[MemberVote]) -> float | None:
    masses = [v.verdict.covered_mass for v in votes if v.verdict is not None and v.verdict.covered_mass is not None]
    return min(masses) if masses else None


def _summary(votes: Sequence[MemberVote]) -> str:
    return "; ".join(f"{v.member}: {v.verdict.selected if v.status == 'answered' and v.verdict else v.status}"
                     + (f" ({v.reason})" if v.reason and v.status != "answered" else "") for v in votes)


def aggregate(question: Question, votes: Sequence[MemberVote], *, how: Aggregate,
              disagreement: float) -> PanelAnswer:
    """The panel's answer to ``question`` (see the module docstring for the rules)."""
    labels = question.labels()
    answered = [v for v in votes if v.status == "answered" and v.verdict is not None]
    refused = [v for v in votes if v.status == "refused"]
    details: dict[str, Any] = {
        "aggregate": how, "members": {v.member: v.to_details() for v in votes},
        "left_out": [v.member for v in votes if v.status != "answered"],
        "chosen": None, "spread": None, "agreement": None, "disagreement": False}
    picks = [v.verdict.selected for v in answered if v.verdict is not None]
    details["disagreement"] = len(set(picks)) > 1 or bool(answered and refused)
    if not answered:
        replied = [v for v in votes if v.status != "failed"]
        if refused and len(refused) == len(replied):
            reason = "; ".join(f"{v.member}: {v.reason or 'refused'}" for v in refused)
            return PanelAnswer(DecisionAnswer(question_id=question.id, refused=True, refusal_reason=reason,
                                              probability_source="panel"), None, details)
        return PanelAnswer(None, UnreadableAnswer(question.id, _summary(votes),
                                                  f"no panel member answered: {_summary(votes)}"), details)
    if how == "majority":
        counts = {label: picks.count(label) for label in labels if label in picks}
        most = max(counts.values())
        winners = [label for label, n in counts.items() if n == most]
        details["agreement"] = most / len(answered)
        if len(winners) > 1:
            details["disagreement"] = True
            return PanelAnswer(None, UnreadableAnswer(
                question.id, _summary(votes),
                f"no majority among the panel ({' vs '.join(winners)}, {most} each): {_summary(votes)}"), details)
        used = [v for v in answered if v.verdict is not None and v.verdict.selected == winners[0]]
    else:
        used = answered
    probabilities = _mean([v.verdict.probabilities for v in used if v.verdict is not None], labels)
    chosen = winners[0] if how == "majority" else _top(probabilities, labels)
    member_p = [v.verdict.probabilities[chosen] for v in answered if v.verdict is not None]
    spread = max(member_p) - min(member_p)
    details.update(chosen=chosen, spread=spread, agreement=picks.count(chosen) / len(answered),
                   disagreement=details["disagreement"] or spread > disagreement + _TIE)
    answer = DecisionAnswer(question_id=question.id, probabilities=probabilities, probability_source="panel",
                            covered_mass=_covered(used))
    return PanelAnswer(answer, None, details)


__all__ = ["Aggregate", "MemberVote", "PanelAnswer", "aggregate", "member_vote"]
