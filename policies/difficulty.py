"""Difficulty policy: stated difficulty and prior hardness from history.

Hard tasks (or ones that failed or escalated before) lean toward the evaluator that reasons in
writing; easy ones toward the cheaper, steadier fixed-option or test-based checks.
"""

from __future__ import annotations

from oracle.policy_settings import DifficultySettings
from oracle.route import Vote
from oracle.signals import Signals
from oracle.policies import register_policy
from oracle.policies._base import BasePolicy


@register_policy("difficulty")
class Difficulty(BasePolicy):
    name = "difficulty"
    version = "1"
    reads = ("difficulty", "prior_hardness")
    settings_type = DifficultySettings
    settings: DifficultySettings

    def vote(self, s: Signals) -> Vote | None:
        if s.prior_hardness is not None and s.prior_hardness >= self.settings.hard_history:
            return self._vote(f"prior hardness {s.prior_hardness:.2f} from history", "hard")
        if s.difficulty == "hard":
            return self._vote("stated difficulty: hard", "hard")
        if s.difficulty == "easy":
            return self._vote("stated difficulty: easy", "easy")
        return None
