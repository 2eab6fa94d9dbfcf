"""Difficulty policy: prior hardness from history and stated difficulty.

A task that failed or escalated before (or, when configured, says it is hard) gets the strongest
verification that can run on it, not a cheaper path: the verifier when it has tests or an
answer-key reference, else the decision judge when it has closed questions, criteria or a claim
check, else the LLM judge; the route marks it ``hard`` so the evaluator spends its repeats. Easy
tasks lean toward the cheaper, steadier fixed-option or test-based checks.

Version 2 (version 1 sent every hard task toward the LLM judge).
"""

from __future__ import annotations

from oracle.routing.settings import DifficultySettings
from oracle.routing.route import Vote
from oracle.routing.signals import Signals
from oracle.policies._base import BasePolicy


class Difficulty(BasePolicy):
    name = "difficulty"
    version = "2"
    reads = ("difficulty", "prior_hardness", "has_tests", "has_reference", "reference_chars",
             "has_closed_question", "n_criteria", "claim_checkable")
    settings_type = DifficultySettings
    settings: DifficultySettings

    def vote(self, s: Signals) -> Vote | None:
        if s.prior_hardness is None and s.difficulty is None:  # the usual case: nothing to go on
            return None
        why = hard_reason(s, self.settings)
        if why is not None:
            cfg = self.settings
            if s.has_tests or (s.has_reference and s.reference_chars <= cfg.checkable_reference_chars):
                return self._vote(f"{why}: the strongest check that runs, the verifier", "hard_checkable")
            if s.has_closed_question or s.n_criteria or s.claim_checkable:
                return self._vote(f"{why}: nothing to run; the decision judge, with repeats", "hard_closed")
            return self._vote(f"{why}: open work; the LLM judge, with repeats", "hard")
        if s.difficulty == "easy":
            return self._vote("stated difficulty: easy", "easy")
        return None


def hard_reason(s: Signals, settings: DifficultySettings) -> str | None:
    """Why the task counts as hard (prior hardness at the threshold, or a stated ``hard`` when
    ``stated_hard``), or None. The router marks the route ``hard`` by the same rule."""
    if s.prior_hardness is not None and s.prior_hardness >= settings.hard_history:
        return f"prior hardness {s.prior_hardness:.2f} from history"
    if settings.stated_hard and s.difficulty == "hard":
        return "stated difficulty: hard"
    return None
