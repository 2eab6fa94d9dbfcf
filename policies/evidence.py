"""Evidence policies: runnable tests, execution output, candidate code and reference answers.

Tests or execution evidence favour the verifier: running the code settles what a judge can only
guess. Code with nothing to run it against goes to a judge instead.
"""

from __future__ import annotations

from dataclasses import dataclass

from oracle.route import Vote
from oracle.signals import Signals
from policies import register_policy
from policies._base import BasePolicy

SHORT_REFERENCE_CHARS = 200


@register_policy("execution_evidence")
@dataclass(frozen=True)
class ExecutionEvidence(BasePolicy):
    """Runnable tests -> verifier; tests in an unsupported language or bare code -> lean to a judge."""

    name = "execution_evidence"
    reads = ("tests_runnable", "has_tests", "language", "has_execution_output", "has_code")

    def vote(self, s: Signals) -> Vote | None:
        if s.tests_runnable:
            return self._vote(f"{s.n_tests} runnable {s.language} test(s): run them",
                              verifier=0.9, decision_judge=0.05, llm_judge=0.05)
        if s.has_tests:
            return self._vote(f"tests present but language {s.language!r} is not runnable here",
                              verifier=0.5, decision_judge=0.1, llm_judge=0.4)
        if s.has_execution_output:
            return self._vote("candidates report execution output: evidence to check",
                              verifier=0.6, decision_judge=0.1, llm_judge=0.3)
        if s.has_code:
            return self._vote("candidate code but no tests to run it against: judge it",
                              verifier=0.2, decision_judge=0.1, llm_judge=0.7)
        return None


@register_policy("reference_answer")
@dataclass(frozen=True)
class ReferenceAnswer(BasePolicy):
    """A short reference is an answer key to check against; a long one guides a judge."""

    name = "reference_answer"
    reads = ("has_reference", "reference_chars", "has_code")

    def vote(self, s: Signals) -> Vote | None:
        if not s.has_reference:
            return None
        if s.reference_chars <= SHORT_REFERENCE_CHARS and not s.has_code:
            return self._vote(f"short reference ({s.reference_chars} chars): check the answer against it",
                              verifier=0.6, decision_judge=0.3, llm_judge=0.1)
        return self._vote(f"long reference ({s.reference_chars} chars): judge against it",
                          verifier=0.2, decision_judge=0.2, llm_judge=0.6)
