"""Evidence policies: runnable tests, execution output, candidate code and reference answers.

Tests or execution evidence favour the verifier: running the code settles what a judge can only
guess. Code with nothing to run it against goes to a judge instead.
"""

from __future__ import annotations

from oracle.policy_settings import ExecutionEvidenceSettings, ReferenceAnswerSettings
from oracle.route import Vote
from oracle.signals import Signals
from oracle.policies import register_policy
from oracle.policies._base import BasePolicy


@register_policy("execution_evidence")
class ExecutionEvidence(BasePolicy):
    """Runnable tests -> verifier; tests in an unsupported language or bare code -> lean to a judge."""

    name = "execution_evidence"
    version = "1"
    reads = ("tests_runnable", "has_tests", "language", "has_execution_output", "has_code")
    settings_type = ExecutionEvidenceSettings

    def vote(self, s: Signals) -> Vote | None:
        if s.tests_runnable:
            return self._vote(f"{s.n_tests} runnable {s.language} test(s): run them", "runnable_tests")
        if s.has_tests:
            return self._vote(f"tests present but language {s.language!r} is not runnable here",
                              "unrunnable_tests")
        if s.has_execution_output:
            return self._vote("candidates report execution output: evidence to check", "execution_output")
        if s.has_code:
            return self._vote("candidate code but no tests to run it against: judge it", "untested_code")
        return None


@register_policy("reference_answer")
class ReferenceAnswer(BasePolicy):
    """A short reference is an answer key to check against; a long one guides a judge."""

    name = "reference_answer"
    version = "1"
    reads = ("has_reference", "reference_chars", "has_code")
    settings_type = ReferenceAnswerSettings
    settings: ReferenceAnswerSettings

    def vote(self, s: Signals) -> Vote | None:
        if not s.has_reference:
            return None
        if s.reference_chars <= self.settings.short_reference_chars and not s.has_code:
            return self._vote(f"short reference ({s.reference_chars} chars): check the answer against it",
                              "short_reference")
        return self._vote(f"long reference ({s.reference_chars} chars): judge against it", "long_reference")
