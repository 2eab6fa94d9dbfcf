"""Cue-balance policy: does the prompt's vocabulary describe checkable or judged work?

Weak evidence on its own (words are not tests), so it spreads its confidence and carries a modest
default weight; it mostly breaks near-ties between the structural policies.
"""

from __future__ import annotations

from oracle.routing.settings import CueBalanceSettings
from oracle.routing.route import Vote
from oracle.routing.signals import Signals
from oracle.policies._base import BasePolicy


class CueBalance(BasePolicy):
    """Lean toward the verifier in proportion to checkable vocabulary, toward a judge otherwise."""

    name = "cue_balance"
    version = "1"
    reads = ("verifiable_cue_density", "judgment_cue_density")
    settings_type = CueBalanceSettings
    settings: CueBalanceSettings

    def vote(self, s: Signals) -> Vote | None:
        v, j = s.verifiable_cue_density, s.judgment_cue_density
        cfg = self.settings
        if v + j < cfg.min_density or v + j <= 0:
            return None
        share = v / (v + j)
        # Normalized to sum to 1: the total, 2 * base + swing + decision_judge, is above 0 (the settings check).
        verifier, judge, decision = cfg.base + cfg.swing * share, cfg.base + cfg.swing * (1 - share), cfg.decision_judge
        total = verifier + decision + judge
        return Vote({"decision_judge": decision / total, "llm_judge": judge / total, "verifier": verifier / total},
                    f"checkable cues {v:.3f} vs judgment cues {j:.3f}", self.reads)
