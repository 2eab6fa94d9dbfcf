"""Claim checks: confirmation against challenge, two opposing questions about one claim.

A single question "is the claim supported?" has one failure mode that matters: a model that leans
towards yes reads as confirmation. Asking the opposite question as well, "is there strong
evidence that the claim is wrong?", turns that lean into a visible disagreement. The claim (the
candidate's answer) is judged against the task's evidence (``context`` and/or ``reference``):

- support yes, challenge no: supported (passed);
- support no, challenge yes: refuted (failed);
- anything else, the two pointing the same way or either one weak: no verdict (``abstained``),
  with a ``ClaimUndecided`` concern that carries both probabilities for the person who decides.

A side is "yes" at or above its threshold, "no" at or below one minus it, weak in between
(``decision_judge.claim_check`` in the config). The score of a verdict is the mean agreement with
the claim, ``(P(support) + 1 - P(challenge)) / 2``. Pure functions; the judge does the asking.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from oracle.results.concerns import ClaimCheckEvidence, ClaimUndecided
from oracle.tasks.questions import Question
from oracle.tasks.task import Task, Trajectory

SUPPORT_ID = "claim_supported"
CHALLENGE_ID = "claim_challenged"
SUPPORT_QUESTION = Question(id=SUPPORT_ID, type="likelihood",
                            instructions="The claim is supported by the evidence.")
CHALLENGE_QUESTION = Question(id=CHALLENGE_ID, type="likelihood",
                              instructions="There is strong evidence that the claim is wrong.")
CLAIM_QUESTIONS = (SUPPORT_QUESTION, CHALLENGE_QUESTION)

Side = Literal["yes", "no", "weak"]
Outcome = Literal["supported", "refuted", "undecided"]
Reason = Literal["agreement", "disagreement", "weak_support", "weak_challenge", "weak_both"]


def claim_state(task: Task, candidate: Trajectory) -> dict[str, Any]:
    """What the model reads: the task's question, the evidence and the claim (nothing else)."""
    evidence = "\n\n".join(text for text in (task.context, task.reference) if text)
    claim = candidate.answer if candidate.answer else (candidate.code or "")
    return {"question": task.prompt, "evidence": evidence, "claim": claim}


def side(probability: float, threshold: float) -> Side:
    if probability >= threshold:
        return "yes"
    if probability <= 1.0 - threshold:
        return "no"
    return "weak"


@dataclass(frozen=True)
class ClaimVerdict:
    support: float
    challenge: float
    support_side: Side
    challenge_side: Side
    outcome: Outcome
    reason: Reason
    support_threshold: float
    challenge_threshold: float

    @property
    def passed(self) -> bool | None:
        return {"supported": True, "refuted": False}.get(self.outcome)

    @property
    def score(self) -> float | None:
        """Mean agreement with the claim; None without a verdict (an undecided claim is not 0.5)."""
        return None if self.outcome == "undecided" else (self.support + 1.0 - self.challenge) / 2

    def to_details(self) -> dict[str, Any]:
        return {"support": self.support, "challenge": self.challenge, "support_side": self.support_side,
                "challenge_side": self.challenge_side, "outcome": self.outcome, "reason": self.reason,
                "support_threshold": self.support_threshold, "challenge_threshold": self.challenge_threshold}

    def concern(self, candidate_id: str) -> ClaimUndecided | None:
        """The typed concern escalation reads, when there is no verdict."""
        if self.outcome != "undecided" or self.reason == "agreement":  # the second test narrows the type
            return None
        return ClaimUndecided(
            candidates=[candidate_id],
            message=(f"the claim check of {candidate_id} has no verdict ({self.reason.replace('_', ' ')}): "
                     f"supported {self.support:.2f}, strong evidence against {self.challenge:.2f}"),
            evidence=ClaimCheckEvidence(support=self.support, challenge=self.challenge,
                                        support_threshold=self.support_threshold,
                                        challenge_threshold=self.challenge_threshold,
                                        reason=self.reason))


def claim_verdict(support: float, challenge: float, *, support_threshold: float,
                  challenge_threshold: float) -> ClaimVerdict:
    """Supported, refuted or undecided, from the two probabilities (see the module docstring)."""
    s, c = side(support, support_threshold), side(challenge, challenge_threshold)
    outcome: Outcome = "undecided"
    reason: Reason
    if s == "weak" or c == "weak":
        reason = "weak_both" if s == c else ("weak_support" if s == "weak" else "weak_challenge")
    elif s == c:
        reason = "disagreement"  # supported and challenged, or neither: the two answers contradict
    else:
        reason, outcome = "agreement", "supported" if s == "yes" else "refuted"
    return ClaimVerdict(support=support, challenge=challenge, support_side=s, challenge_side=c,
                        outcome=outcome, reason=reason, support_threshold=support_threshold,
                        challenge_threshold=challenge_threshold)
