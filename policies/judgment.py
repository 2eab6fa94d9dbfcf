"""Judgment policies: graded scales, written reasons, open-ended work and pairwise preference.

These favour the LLM judge: it can weigh qualities that no test or fixed option captures, and the
written reason is itself the product when one is asked for.
"""

from __future__ import annotations

from dataclasses import dataclass

from oracle.route import Vote
from oracle.signals import Signals
from policies import register_policy
from policies._base import BasePolicy

OPEN_ENDED_DENSITY = 0.02


@register_policy("open_ended_judgment")
@dataclass(frozen=True)
class OpenEndedJudgment(BasePolicy):
    """A graded scale, a rationale, or judgment vocabulary in the prompt -> LLM judge."""

    name = "open_ended_judgment"
    reads = ("asks_graded_scale", "asks_rationale", "judgment_cue_density")

    def vote(self, s: Signals) -> Vote | None:
        asked = [name for name, on in (("a graded scale", s.asks_graded_scale),
                                       ("a written rationale", s.asks_rationale)) if on]
        if asked:
            return self._vote(" and ".join(asked) + " asked for",
                              verifier=0.05, decision_judge=0.1, llm_judge=0.85)
        if s.judgment_cue_density >= OPEN_ENDED_DENSITY:
            return self._vote(f"judgment vocabulary ({s.judgment_cue_density:.3f} of words)",
                              verifier=0.1, decision_judge=0.2, llm_judge=0.7)
        return None


@register_policy("pairwise_preference")
@dataclass(frozen=True)
class PairwisePreference(BasePolicy):
    """Several free-text candidates with no tests or questions: a preference to judge."""

    name = "pairwise_preference"
    reads = ("n_candidates", "has_tests", "n_questions", "has_code")

    def vote(self, s: Signals) -> Vote | None:
        if s.n_candidates < 2 or s.has_tests or s.n_questions or s.has_code:
            return None
        return self._vote(f"preference among {s.n_candidates} open-ended answers",
                          verifier=0.05, decision_judge=0.15, llm_judge=0.8)
