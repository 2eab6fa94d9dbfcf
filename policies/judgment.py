"""Judgment policies: graded scales, written reasons, open-ended work and pairwise preference.

These favour the LLM judge: it can weigh qualities that no test or fixed option captures, and the
written reason is itself the product when one is asked for.
"""

from __future__ import annotations

from oracle.routing.settings import OpenEndedJudgmentSettings, PairwisePreferenceSettings
from oracle.routing.route import Vote
from oracle.routing.signals import Signals
from oracle.policies._base import BasePolicy


class OpenEndedJudgment(BasePolicy):
    """A graded scale, a rationale, or judgment vocabulary in the prompt -> LLM judge."""

    name = "open_ended_judgment"
    version = "1"
    reads = ("asks_graded_scale", "asks_rationale", "judgment_cue_density")
    settings_type = OpenEndedJudgmentSettings
    settings: OpenEndedJudgmentSettings

    def vote(self, s: Signals) -> Vote | None:
        if s.asks_graded_scale or s.asks_rationale:
            asked = [name for name, on in (("a graded scale", s.asks_graded_scale),
                                           ("a written rationale", s.asks_rationale)) if on]
            return self._vote(" and ".join(asked) + " asked for", "asked")
        if s.judgment_cue_density >= self.settings.vocabulary_density:
            return self._vote(f"judgment vocabulary ({s.judgment_cue_density:.3f} of words)", "vocabulary")
        return None


class PairwisePreference(BasePolicy):
    """Several free-text candidates with no tests, questions or answer key: a preference to judge.

    An answer key (``has_answer_key``: a short reference, no candidate code) makes several
    candidates a reference check, not a preference: each answer is right or wrong on its own, so
    this policy abstains and the ``reference_answer`` vote decides. Version 2 (version 1 voted for
    the LLM judge on four answers to "Who wrote Pride and Prejudice?" with reference "Jane Austen").
    """

    name = "pairwise_preference"
    version = "2"
    reads = ("n_candidates", "has_tests", "n_questions", "has_code", "has_answer_key")
    settings_type = PairwisePreferenceSettings
    settings: PairwisePreferenceSettings

    def vote(self, s: Signals) -> Vote | None:
        if (s.n_candidates < self.settings.min_candidates or s.has_tests or s.n_questions or s.has_code
                or s.has_answer_key):
            return None
        return self._vote(f"preference among {s.n_candidates} open-ended answers", "preference")
