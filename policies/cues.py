"""Cue-balance policy: does the prompt's vocabulary describe checkable or judged work?

Weak evidence on its own (words are not tests), so it spreads its confidence and carries a modest
default weight; it mostly breaks near-ties between the structural policies.
"""

from __future__ import annotations

from oracle.policy import spread
from oracle.policy_settings import CueBalanceSettings
from oracle.route import Vote
from oracle.signals import Signals
from oracle.policies import register_policy
from oracle.policies._base import BasePolicy


@register_policy("cue_balance")
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
        return Vote(scores=spread(verifier=cfg.base + cfg.swing * share, decision_judge=cfg.decision_judge,
                                  llm_judge=cfg.base + cfg.swing * (1 - share)),
                    reason=f"checkable cues {v:.3f} vs judgment cues {j:.3f}", reads=self.reads)
