"""Closed-question policy: fixed-answer questions over free text favour the decision judge.

A typed decision model answering a fixed set of options is steadier, faster and far cheaper than
parsing a generative model's prose, so explicit questions and yes/no rubrics go there.
"""

from __future__ import annotations

from oracle.routing.settings import ClaimCheckSettings, ClosedQuestionSettings
from oracle.routing.route import Vote
from oracle.routing.signals import Signals
from oracle.policies._base import BasePolicy


class ClosedQuestion(BasePolicy):
    """Explicit questions -> decision judge; yes/no criteria lean there too; open criteria do not."""

    name = "closed_question"
    version = "1"
    reads = ("n_questions", "n_criteria", "yes_no_criteria_share")
    settings_type = ClosedQuestionSettings
    settings: ClosedQuestionSettings

    def vote(self, s: Signals) -> Vote | None:
        if s.n_questions:
            return self._vote(f"{s.n_questions} fixed-option question(s)", "questions")
        if not s.n_criteria:
            return None
        share = s.yes_no_criteria_share
        if share == 1.0:
            return self._vote(f"all {s.n_criteria} criteria read as yes/no checks", "all_yes_no")
        if share >= self.settings.mostly_yes_no_share:
            return self._vote(f"{share:.0%} of {s.n_criteria} criteria read as yes/no checks", "mostly_yes_no")
        return self._vote(f"{s.n_criteria} open criteria: a rubric to judge", "open_criteria")


class ClaimCheck(BasePolicy):
    """One claim and text evidence, a claim check asked for -> decision judge (claim check).

    Two opposing fixed questions ("the evidence supports it", "there is strong evidence against
    it") settle a single claim more steadily than a generative verdict, and disagreement between
    them is itself the signal to escalate.
    """

    name = "claim_check"
    version = "1"
    reads = ("claim_checkable", "claim_check_requested", "asks_claim_check", "n_candidates", "has_reference",
             "has_context")
    settings_type = ClaimCheckSettings

    def vote(self, s: Signals) -> Vote | None:
        if not s.claim_checkable:
            return None
        how = "claim_check: true" if s.claim_check_requested else "the prompt asks to verify a claim"
        evidence = " and ".join(name for name, on in (("reference", s.has_reference), ("context", s.has_context))
                                if on)
        return self._vote(f"{how}; one candidate, evidence in the {evidence}: claim check", "claim")
