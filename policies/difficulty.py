"""Difficulty policy: stated difficulty and prior hardness from history.

Hard tasks (or ones that failed or escalated before) lean toward the evaluator that reasons in
writing; easy ones toward the cheaper, steadier fixed-option or test-based checks.
"""

from __future__ import annotations

from dataclasses import dataclass

from oracle.route import Vote
from oracle.signals import Signals
from policies import register_policy
from policies._base import BasePolicy

HARD_HISTORY = 0.5


@register_policy("difficulty")
@dataclass(frozen=True)
class Difficulty(BasePolicy):
    name = "difficulty"
    reads = ("difficulty", "prior_hardness")

    def vote(self, s: Signals) -> Vote | None:
        if s.prior_hardness is not None and s.prior_hardness >= HARD_HISTORY:
            return self._vote(f"prior hardness {s.prior_hardness:.2f} from history",
                              verifier=0.3, decision_judge=0.2, llm_judge=0.5)
        if s.difficulty == "hard":
            return self._vote("stated difficulty: hard", verifier=0.3, decision_judge=0.2, llm_judge=0.5)
        if s.difficulty == "easy":
            return self._vote("stated difficulty: easy", verifier=0.4, decision_judge=0.4, llm_judge=0.2)
        return None
