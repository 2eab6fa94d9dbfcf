"""Evidence policies: a repository's tests, runnable tests, execution output, candidate code,
reference answers, tool use.

Tests or execution evidence favour the verifier: running the code settles what a judge can only
guess. Code with nothing to run it against goes to a judge instead.
"""

from __future__ import annotations

from oracle.routing.settings import ExecutionEvidenceSettings, ReferenceAnswerSettings, ToolUseSettings
from oracle.routing.route import Vote
from oracle.routing.signals import Signals
from oracle.policies._base import BasePolicy


class ExecutionEvidence(BasePolicy):
    """Runnable tests -> verifier; tests in an unsupported language or bare code -> lean to a judge.

    The rule for repository tasks (version 2): a task with a repository and a ``repo_tests`` test
    (``has_repository``) votes ``repository_tests`` for the verifier before anything else, whatever
    the language: only the verifier applies a candidate's patch to the repository and runs its
    suite, while a judge would see a diff and neither the code around it nor the runs. Explicit
    criteria or questions may still outvote it (a rubric asks for a judgment); ``evaluator:
    verifier`` on the task forces it. Version 1 voted ``runnable_tests`` on such a task when its
    language was python or unset, and ``unrunnable_tests`` otherwise.
    """

    name = "execution_evidence"
    version = "2"
    reads = ("has_repository", "tests_runnable", "has_tests", "language", "has_execution_output", "has_code")
    settings_type = ExecutionEvidenceSettings

    def vote(self, s: Signals) -> Vote | None:
        if s.has_repository:
            return self._vote(f"a repository and its own tests ({s.n_tests} test(s)): apply each candidate's "
                              "patch and run them", "repository_tests")
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


class ReferenceAnswer(BasePolicy):
    """A short reference is an answer key to check against; a long one guides a judge.

    What counts as short is the signal ``has_answer_key`` (computed with this policy's
    ``short_reference_chars``), so this vote and ``pairwise_preference``'s abstention read one
    notion. Version 2 (version 1 compared the length itself; same votes on real signals).
    """

    name = "reference_answer"
    version = "2"
    reads = ("has_reference", "reference_chars", "has_answer_key", "has_code")
    settings_type = ReferenceAnswerSettings
    settings: ReferenceAnswerSettings

    def vote(self, s: Signals) -> Vote | None:
        if not s.has_reference:
            return None
        if s.has_answer_key:
            return self._vote(f"reference check: a short reference ({s.reference_chars} chars) is an answer key; "
                              "check the answers against it", "short_reference")
        if s.has_code:
            return self._vote(f"a reference ({s.reference_chars} chars) beside candidate code is no answer key: "
                              "judge against it", "long_reference")
        return self._vote(f"long reference ({s.reference_chars} chars): judge against it", "long_reference")


class ToolUse(BasePolicy):
    """Expected tool calls, results or final state -> verifier; tool steps with none expected -> a judge.

    An agent run is best checked by what it did: the calls it made and what the tools returned.
    When the task says what those should be, the verifier checks the steps; when it does not, the
    evidence is still in the steps, and a judge that reads them (the LLM judge) weighs it.
    """

    name = "tool_use"
    version = "1"
    reads = ("has_trajectory_tests", "has_tool_steps")
    settings_type = ToolUseSettings

    def vote(self, s: Signals) -> Vote | None:
        if s.has_trajectory_tests:
            return self._vote("expected tool calls, tool results or final state: check the steps",
                              "expected_calls")
        if s.has_tool_steps:
            return self._vote("tool steps with nothing to check them against: a judge reads the steps",
                              "unchecked_steps")
        return None
