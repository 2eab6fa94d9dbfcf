"""Closed-question policy: fixed-answer questions over free text favour the decision judge.

A typed decision model answering a fixed set of options is steadier, faster and far cheaper than
parsing a generative model's prose, so explicit questions and yes/no rubrics go there.
"""

from __future__ import annotations

from oracle.policy_settings import ClosedQuestionSettings
from oracle.route import Vote
from oracle.signals import Signals
from oracle.policies import register_policy
from oracle.policies._base import BasePolicy


@register_policy("closed_question")
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
