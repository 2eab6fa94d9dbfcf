"""Cue-balance policy: does the prompt's vocabulary describe checkable or judged work?

Weak evidence on its own (words are not tests), so it spreads its confidence and carries a modest
default weight; it mostly breaks near-ties between the structural policies.
"""

from __future__ import annotations

from dataclasses import dataclass

from oracle.route import Vote
from oracle.signals import Signals
from policies import register_policy
from policies._base import BasePolicy

MIN_DENSITY = 0.005


@register_policy("cue_balance")
@dataclass(frozen=True)
class CueBalance(BasePolicy):
    """Lean toward the verifier in proportion to checkable vocabulary, toward a judge otherwise."""

    name = "cue_balance"
    reads = ("verifiable_cue_density", "judgment_cue_density")

    def vote(self, s: Signals) -> Vote | None:
        v, j = s.verifiable_cue_density, s.judgment_cue_density
        if v + j < MIN_DENSITY:
            return None
        share = v / (v + j)
        return self._vote(f"checkable cues {v:.3f} vs judgment cues {j:.3f}",
                          verifier=0.2 + 0.6 * share, decision_judge=0.2,
                          llm_judge=0.2 + 0.6 * (1 - share))
