"""``oracle check``: validate a task's tests without any candidate, and say which are broken.

With ``task.solution`` the tests run on it exactly as ``evaluate`` runs them first (the same
sandbox path and cache, solution.py): each test's outcome there, and the broken ones (failing on
the reference, or broken by themselves). Without one, each code test runs against an empty program:
that finds what is broken whatever the candidate (it does not compile, imports what the test side
lacks, raises before asking the candidate anything); the other outcomes say nothing and are shown
as ``unverified``. Checks of a trajectory are not run here (there is no trajectory). A repository
task's tests run at the base commit with the test patch and no change (repo_tests.check): a
fail-to-pass test passing there, or a pass-to-pass test not passing, is broken.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any

from oracle.config.model import OracleConfig
from oracle.errors import EnvironmentBuildError, InterpreterUnusable
from oracle.sandbox import pinned_pytest
from oracle.sandbox.limits import check_timeouts
from oracle.sandbox.runs import run_in_pool
from oracle.strategies.verifier import broken, environments, harness, repo_tests, solution
from oracle.strategies.verifier.extract import ExtractedCode, normalize_language
from oracle.strategies.verifier.runner import CodeRunner
from oracle.tasks.task import Task
from oracle.tasks.testspec import CheckTest, PytestTest, RepoTestsTest


@dataclass
class TestsCheck:
    """What ``oracle check`` found for one task."""

    task_id: str
    solution: bool
    """Whether the tests ran on ``task.solution`` (else on an empty program)."""
    tests: list[dict[str, Any]] = field(default_factory=list)
    """Per test (a suite: per case): test, kind, outcome (on the reference; ``unverified`` without one;
    ``not_run`` for a trajectory check), broken, message (the reason when broken), duration_ms."""
    broken_tests: list[dict[str, str]] = field(default_factory=list)
    error: str | None = None
    """Why the tests could not be checked (``task.solution: ...``, a setting the task needs)."""
    cached: bool = False
    subject: str | None = None
    """What the tests ran on, when it is neither ``task.solution`` nor an empty program (a repository
    task: its base commit with the test patch)."""

    @property
    def ok(self) -> bool:
        return self.error is None and not self.broken_tests

    def as_dict(self) -> dict[str, Any]:
        out = {"task_id": self.task_id, "ok": self.ok, "solution": self.solution, "cached": self.cached,
               "error": self.error, "tests": self.tests, "broken_tests": self.broken_tests}
        if self.subject is not None:
            out["subject"] = self.subject
        return out


def _row(outcome: harness.TestOutcome, shown: str, message: str, is_broken: bool) -> dict[str, Any]:
    return {"test": outcome.name, "kind": outcome.kind, "outcome": shown, "broken": is_broken, "message": message,
            "duration_ms": round(outcome.duration_ms, 1)}


async def check_tests(strategy: Any, task: Task, config: OracleConfig) -> TestsCheck:
    """Run the validation for ``task`` with ``strategy``'s warm sandbox pools (a VerifierStrategy)."""
    from oracle.strategies.verifier.strategy import _reference_code, interpreter_status

    cfg = config.verifier
    report = TestsCheck(task_id=task.id, solution=task.solution is not None)
    problem = check_timeouts(task.tests, cfg)
    if problem is None and any(isinstance(t, CheckTest) for t in task.tests) and not task.entry_point:
        problem = "task.entry_point: required by check(candidate) tests"
    if problem is None and task.repository is not None and any(isinstance(t, RepoTestsTest) for t in task.tests):
        python, why = interpreter_status("python", cfg, task.environment)
        if python is None:
            report.error = f"python: {why}"
            return report
        report.subject = "the base commit with the test patch, no candidate change"
        report.tests, report.broken_tests, report.error = await repo_tests.check(task, cfg, python)
        return report
    in_process = task.execution == "in_process"
    if problem is None and in_process and not cfg.allow_in_process:
        problem = "task.execution: 'in_process' also needs verifier.allow_in_process: true"
    if problem is not None:
        report.error = problem
        return report
    indices = [i for i, t in enumerate(task.tests) if isinstance(t, harness.CODE_TESTS)]
    rows: dict[int, list[dict[str, Any]]] = {
        i: [{"test": harness.test_name(t, i), "kind": t.kind, "outcome": "not_run",  # type: ignore[arg-type]
             "broken": False, "message": "checks a trajectory: nothing to run it on", "duration_ms": 0.0}]
        for i, t in enumerate(task.tests) if i not in indices}
    if not indices:
        report.tests = [row for i in sorted(rows) for row in rows[i]]
        return report
    if task.solution is not None:
        code = _reference_code(task)
        if isinstance(code, str):
            report.error = code
            return report
    else:
        code = ExtractedCode("", None, normalize_language(task.language) or "python")
    # The same interpreters, environment and test-side pytest as ``evaluate`` (strategy.py).
    exe, why = interpreter_status(code.language, cfg, task.environment)
    python, python_why = interpreter_status("python", cfg, task.environment)
    if exe is None or python is None:
        report.error = f"language {code.language!r} cannot run here: {why or python_why}"
        return report
    interpreters = {"python": python, code.language: exe}
    env, source = environments.named(task.environment, cfg)
    try:
        run_env = await asyncio.to_thread(environments.prepare, env, source, cfg, python)
    except (EnvironmentBuildError, InterpreterUnusable) as exc:
        report.error = str(exc)
        return report
    pytest = await asyncio.to_thread(pinned_pytest.source, run_env.python, run_env.sys_path, run_env.mounts) if any(
        isinstance(t, PytestTest) for t in task.tests) else None  # the test side's pytest (pytest tests)
    pool = await asyncio.to_thread(strategy._pool, cfg, interpreters, run_env, pytest)
    prompt_code = harness.prompt_definitions(task.prompt) if task.language in (None, "python") else None
    runner = CodeRunner(pool, cfg, task.entry_point, prompt_code, interpreters, in_process,
                        "in_process" if in_process else "isolated", run_in_pool, module=task.module, pytest=pytest)
    if task.solution is not None:
        run = await strategy._reference(task, runner, code)
        report.cached = run.cached
        if run.problem is not None:
            report.error = run.problem
            return report
        decision = broken.decide({}, run.outcomes)
        found = {(b.index, b.test): b.reason for b in decision.broken}
        report.broken_tests = [{"test": b.test, "reason": b.reason} for b in decision.broken]
        for i in indices:
            rows[i] = [_row(o, o.outcome, found.get((i, o.name), o.message), (i, o.name) in found)
                       for o in harness.flatten(run.outcomes[i])]
    else:
        async def on_nothing(i: int) -> harness.TestOutcome:
            try:
                return await runner.run(task.tests[i], i, code)  # type: ignore[arg-type]
            except Exception as exc:  # noqa: BLE001 - ours: it says nothing of the test
                return solution.unverified(task.tests[i], i, exc)

        outcomes = await asyncio.gather(*(on_nothing(i) for i in indices))
        for i, outcome in zip(indices, outcomes):
            rows[i] = []
            for o in harness.flatten(outcome):
                if o.outcome == "broken":
                    report.broken_tests.append({"test": o.name, "reason": o.message})
                    rows[i].append(_row(o, "broken", o.message, True))
                else:
                    rows[i].append(_row(o, "unverified", "no task.solution to check it against", False))
    report.tests = [row for i in sorted(rows) for row in rows[i]]
    return report
