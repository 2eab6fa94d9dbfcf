"""Candidate patches to a repository, judged by the repository's own tests (a ``repo_tests`` test).

Per candidate, in parallel up to ``verifier.workers``: a fresh tree at the base commit with no
history past it (oracle/repo/worktree.py) -> its patch or files applied (a patch that does not apply
fails that candidate with the reason, never the task) -> the protected surface restored to the base
plus the test patch, each change it made reported (``tampering``; a test-file-only change is
restored and the candidate judged on the rest, a conftest/config/site-hook/.git change fails it:
``verifier.repo_test_edits`` / ``repo_hook_edits``) -> the protected files fingerprinted -> the
tests run in the sandbox (oracle/sandbox/repo_run.py) -> the protected files checked again -> the
outcomes -> ``resolved`` -> the tree destroyed.

``resolved`` is SWE-bench's rule: every fail-to-pass test passes and no pass-to-pass test fails;
a test skipped, xfailed, deselected or not run is not passed. The score is the mean of the two
shares (fail-to-pass passed, pass-to-pass passed; one share when the other list is empty), so 1.0
means resolved and ranking puts resolved candidates first; details give both as "k/n" and every
node's outcome with its message. A run whose report cannot be trusted (``RepoRun.problem``: an
early exit, a crash, a report that disagrees with the exit status) is that candidate's error,
never a pass. The candidate's code shares the test process, so the result says
``integrity: shared_process`` (docs/repository.md: what that allows, and the defences).

oracle/repo and oracle/sandbox/repo_run are imported when a repository task is judged: most tasks
never need them.
"""

from __future__ import annotations

import asyncio
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from oracle.config.model import VerifierConfig
from oracle.errors import OracleError
from oracle.results.concerns import ProtectedFileChange
from oracle.results.provenance import EvaluationProvenance, Execution
from oracle.results.result import CandidateResult, EvaluationResult, Status
from oracle.sandbox import Sandbox, SandboxLimits
from oracle.sandbox import pinned_pytest
from oracle.strategies.protocol import EvaluationContext
from oracle.strategies.verifier import containment, environments, scoring
from oracle.tasks.task import Task, Trajectory
from oracle.tasks.testspec import RepoTestsTest

PASSED = frozenset({"passed", "xpassed"})
"""What counts as passing for a required node (a skip, an xfail, deselected, not run never do)."""
TEST_EDITS = frozenset({"test_file"})
"""Categories ``verifier.repo_test_edits`` decides; every other category is ``repo_hook_edits``'s."""


def repo_test(task: Task) -> tuple[int, RepoTestsTest] | None:
    """The task's ``repo_tests`` test and its index, or None."""
    return next(((i, t) for i, t in enumerate(task.tests) if isinstance(t, RepoTestsTest)), None)


@dataclass
class Judged:
    """One candidate's verdict before it becomes a CandidateResult."""

    resolved: bool = False
    outcomes: dict[str, dict[str, Any]] = field(default_factory=dict)
    failed_because: str | None = None
    """Why it failed without its tests deciding: the patch did not apply, a protected file, an
    untrusted run. None when its tests decided."""
    error: str | None = None
    """The run's ``problem`` (its report cannot be trusted)."""
    ours: str | None = None
    """A fault of ours (the sandbox could not run it): unscored."""
    protected: list[ProtectedFileChange] = field(default_factory=list)
    change: dict[str, Any] = field(default_factory=dict)
    run: dict[str, Any] = field(default_factory=dict)


def _action(category: str, cfg: VerifierConfig) -> str:
    rule = cfg.repo_test_edits if category in TEST_EDITS else cfg.repo_hook_edits
    return "restored" if rule == "restore" else "failed"


def _protected(changes: list, cfg: VerifierConfig, when: str) -> list[ProtectedFileChange]:
    return [ProtectedFileChange(path=c.path, category=c.category, change=c.change, when=when,  # type: ignore[arg-type]
                                action="failed" if when == "run" else _action(c.category, cfg))  # type: ignore[arg-type]
            for c in changes]


def _named(changes: list[ProtectedFileChange]) -> str:
    return ", ".join(f"{c.path} ({c.category}, {c.change})" for c in changes[:5]) + \
        (f" and {len(changes) - 5} more" if len(changes) > 5 else "")


class RepoJudge:
    """Judges the candidates of one repository task (see the module docstring)."""

    def __init__(self, task: Task, test: RepoTestsTest, cfg: VerifierConfig, sandbox: Sandbox,
                 run_env: environments.RunEnvironment, pytest: pinned_pytest.PytestSource | None, base: Any,
                 parent: Path) -> None:
        """``parent``: where the candidates' trees are made (a tmpfs when there is one)."""
        self.task, self.test, self.cfg, self.sandbox = task, test, cfg, sandbox
        self.run_env, self.pytest, self.base, self.parent = run_env, pytest, base, parent
        env = task.environment
        self.install = env.install if env is not None else "pythonpath"
        self.pythonpath = list(env.pythonpath) if env is not None else ["."]
        self.node_ids = list(test.fail_to_pass) + list(test.pass_to_pass)
        self.timeout_s = float(test.timeout_s or cfg.repo_timeout_s)
        self.runner_paths = command_files(test, base)
        self.test_patch_paths = tuple(sorted({*base.with_test_patch(task.test_patch or ""), *self.runner_paths}))
        """Every path the test patch touches and every file a custom command names (restore puts them
        back; the after-run check covers them)."""

    async def judge(self, trajectory: Trajectory) -> Judged:
        from oracle.repo import worktree

        tree = await asyncio.to_thread(worktree.make_tree, self.base, self.parent)
        try:
            return await self._judge_tree(trajectory, tree)
        finally:
            await asyncio.to_thread(worktree.destroy, tree)

    async def _judge_tree(self, trajectory: Trajectory, tree: Path) -> Judged:
        from oracle.repo import patching, protected
        from oracle.sandbox.repo_run import run_repo_tests
        from oracle.tasks.patch_text import candidate_change

        out = Judged()
        change = candidate_change(trajectory)
        out.change = {"kind": change.kind, "source": change.source}
        if change.kind != "none":
            if change.kind == "patch":
                applied = await asyncio.to_thread(patching.apply_patch, tree, change.patch)
            else:
                applied = await asyncio.to_thread(patching.apply_files, tree, dict(change.files))
            out.change["paths"] = list(applied.paths)
            if not applied.ok:
                out.failed_because = f"its {'patch' if change.kind == 'patch' else 'files'} could not be applied: " \
                                     f"{applied.reason}"
                return out
        out.protected = _protected(await asyncio.to_thread(protected.restore, tree, self.base,
                                                           self.task.test_patch or "", self.runner_paths),
                                   self.cfg, "patch")
        fatal = [c for c in out.protected if c.action == "failed"]
        if fatal:
            out.failed_because = f"it changed protected files: {_named(fatal)}"
            return out
        # Every file the test patch touches is checked too, whatever its name (a data fixture, a helper module).
        owned = self.test_patch_paths
        before = await asyncio.to_thread(protected.fingerprint, tree, owned)
        run = await run_repo_tests(self.sandbox, tree, node_ids=self.node_ids, command=self.test.command,
                                   junit_xml=self.test.junit_xml, python=self.run_env.python,
                                   env_mounts=self.run_env.mounts, sys_path=self.run_env.sys_path,
                                   pythonpath=self.pythonpath, install=self.install, pytest=self.pytest,
                                   timeout_s=self.timeout_s,
                                   subdir=self.task.repository.subdir if self.task.repository else None)
        during = _protected(await asyncio.to_thread(protected.changed_since, tree, before, owned), self.cfg, "run")
        out.protected += during
        out.outcomes = {n: {"outcome": o.outcome, "message": o.message, "duration_ms": round(o.duration_ms, 3)}
                        for n, o in run.outcomes.items()}
        out.run = {"exit_code": run.exit_code, "report_complete": run.report_complete,
                   "report_source": run.report_source, "duration_ms": round(run.duration_ms, 3)}
        if run.build_error is not None:
            out.run["build_error"] = run.build_error[-2000:]
            out.failed_because = "its editable install failed: " + " | ".join(run.build_error.strip().splitlines()[-3:])
        if run.problem is not None:
            out.error = run.problem
            out.failed_because = f"its test run cannot be trusted: {run.problem}"
            out.run["stdout_tail"] = run.stdout_tail[-1500:]
        if during:  # what the run reported rests on files it changed: nothing it called passed stands
            out.failed_because = f"its tests changed protected files while they ran: {_named(during)}"
            out.outcomes = {n: o if o["outcome"] not in PASSED else
                            {**o, "outcome": "error", "message": "not trusted: protected files changed during the run"}
                            for n, o in out.outcomes.items()}
        if out.failed_because is None:
            passed = {n for n, o in out.outcomes.items() if o["outcome"] in PASSED}
            out.resolved = all(n in passed for n in self.node_ids)
        return out


def command_files(test: RepoTestsTest, base: Any) -> tuple[str, ...]:
    """The base's files a custom (non-pytest) ``command`` names, repository-relative: its runner
    script decides the JUnit report, so a candidate may not rewrite it (protected as a test file)."""
    from oracle.tasks.testspec import runs_pytest

    if runs_pytest(test.command):
        return ()
    files = base.listing.files
    found = []
    for arg in test.command or []:
        if not arg or arg.startswith("-") or os.path.isabs(arg):
            continue
        rel = os.path.normpath(os.path.join(base.subdir or "", arg))
        if not rel.startswith("..") and rel in files:
            found.append(rel)
    return tuple(dict.fromkeys(found))


def shares(test: RepoTestsTest, outcomes: dict[str, dict[str, Any]]) -> tuple[tuple[int, int], tuple[int, int]]:
    """(passed, total) of the fail-to-pass and of the pass-to-pass tests."""
    def share(nodes: list[str]) -> tuple[int, int]:
        return sum(outcomes.get(n, {}).get("outcome") in PASSED for n in nodes), len(nodes)
    return share(list(test.fail_to_pass)), share(list(test.pass_to_pass))


def candidate_result(cid: str, test: RepoTestsTest, judged: Judged) -> CandidateResult:
    f2p, p2p = shares(test, judged.outcomes)
    fail_to_pass = set(test.fail_to_pass)  # SWE-bench lists run to thousands of node ids
    details: dict[str, Any] = {
        "resolved": judged.resolved, "fail_to_pass": f"{f2p[0]}/{f2p[1]}", "pass_to_pass": f"{p2p[0]}/{p2p[1]}",
        "change": judged.change,
        "tests": [{"name": n, "node_id": n, "group": "fail_to_pass" if n in fail_to_pass else "pass_to_pass",
                   **judged.outcomes.get(n, {"outcome": "not_run", "message": "not run", "duration_ms": 0.0})}
                  for n in [*test.fail_to_pass, *test.pass_to_pass]]}
    if judged.protected:
        details["protected_changes"] = [c.model_dump() for c in judged.protected]
    if judged.run:
        details["run"] = judged.run
    if judged.ours is not None:
        details["unscored_because"] = [judged.ours]
        return CandidateResult(id=cid, score=None, passed=None, status=Status.failed, details=details)
    if judged.error is not None:
        details["error"] = judged.error
    failing = [t for t in details["tests"] if t["outcome"] not in PASSED]
    restored = [c.path for c in judged.protected if c.action == "restored"]
    if judged.failed_because is not None:
        details["failed_because"] = judged.failed_because
        details["first_failure"] = details["summary"] = judged.failed_because
    elif failing:
        line = lambda t: f"{t['node_id']}: {t['outcome']}: {' | '.join(str(t['message']).splitlines())}"  # noqa: E731
        details["summary"] = "; ".join(line(t)[:300] for t in failing[:3])
        details["first_failure"] = line(failing[0])[:500]
    if restored:  # said first: what it was judged on is not all it handed in
        details["restored"] = restored
        said = f"its changes to {', '.join(restored[:3])}{' ...' if len(restored) > 3 else ''} were restored"
        details["summary"] = f"{said}; {details['summary']}" if details.get("summary") else said
    counted = [s for s in (f2p, p2p) if s[1]]
    score = 1.0 if judged.resolved else (
        sum(k / n for k, n in counted) / len(counted) if counted and judged.failed_because is None else 0.0)
    details["passed_tests"] = f2p[0] + p2p[0]
    details["total_tests"] = f2p[1] + p2p[1]
    return CandidateResult(id=cid, score=score, passed=judged.resolved, details=details)


async def evaluate(ctx: EvaluationContext, cfg: VerifierConfig, python: str) -> EvaluationResult:
    """The verifier's result for a repository task (the strategy hands over here with the Python
    interpreter the sandbox user can run)."""
    task = ctx.task
    found = repo_test(task)
    assert found is not None and task.repository is not None
    index, test = found
    others = [i for i, t in enumerate(task.tests) if i != index]
    if others:
        return EvaluationResult.failure(
            "verifier", f"task.tests[{others[0]}]: a repository task is judged by its one repo_tests test; give the "
                        "other tests as part of the repository or the test patch", error_type="TaskValidationError")
    if not test.fail_to_pass and not test.pass_to_pass:
        return EvaluationResult.failure("verifier", f"task.tests[{index}]: list at least one fail_to_pass or "
                                        "pass_to_pass node id", error_type="TaskValidationError")
    prepared = await _prepare(task, test, cfg, python)
    if isinstance(prepared, EvaluationResult):
        return prepared
    judge, provenance = prepared
    limit = asyncio.Semaphore(cfg.workers or os.cpu_count() or 1)

    async def one(trajectory: Trajectory) -> Judged:
        async with limit:
            try:
                return await judge.judge(trajectory)
            except (OracleError, OSError) as exc:  # ours: the sandbox or the host could not run it
                return Judged(ours=containment.describe(exc))
    judged = await asyncio.gather(*(one(t) for t in ctx.trajectories))
    candidates = [candidate_result(t.id, test, j) for t, j in zip(ctx.trajectories, judged)]
    ours = {c.id: c.details["unscored_because"][0] for c in candidates if c.status == Status.failed}
    if ours and len(ours) == len(candidates):
        first = next(iter(ours.values()))
        return EvaluationResult.failure("verifier", f"the sandbox could give no candidate a verdict: {first}",
                                        error_type="SandboxError", provenance=provenance, calls=len(candidates),
                                        details={"candidates_unscored": [c.model_dump() for c in candidates]})
    best, ranking, ties = scoring.rank(candidates)
    best = scoring.passing_best(best, candidates)
    details: dict[str, Any] = {"mode": "repo_tests", "tests": 1, "ties": ties, "tie_break": "input order",
                               "none_passed": not any(c.passed for c in candidates),
                               "resolved": [c.id for c in candidates if c.passed],
                               "base_commit": judge.base.commit}
    if ours:
        details["sandbox_failures"] = {cid: [why] for cid, why in ours.items()}
    return EvaluationResult(evaluator="verifier", status=Status.ok, best=best, ranking=ranking,
                            candidates=candidates, calls=len(candidates), cost_usd=0.0, provenance=provenance,
                            details=details, explanation=_explain(candidates, best))


async def check(task: Task, cfg: VerifierConfig, python: str) -> tuple[list[dict[str, Any]], list[dict[str, str]],
                                                                      str | None]:
    """``oracle check`` for a repository task: the tests at the base commit with the test patch and
    no change. A fail-to-pass test that passes there is not one; a pass-to-pass test that does not
    pass there is broken (the task's fault). Returns (rows, broken, error)."""
    found = repo_test(task)
    assert found is not None
    index, test = found
    prepared = await _prepare(task, test, cfg, python)
    if isinstance(prepared, EvaluationResult):
        return [], [], prepared.error.message if prepared.error else "the repository cannot be read"
    judge, _ = prepared
    at_base = await judge.judge(Trajectory(id="base", patch=""))
    if at_base.failed_because is not None:
        return [], [], f"task.tests[{index}]: at the base commit with the test patch, {at_base.failed_because}"
    rows: list[dict[str, Any]] = []
    broken: list[dict[str, str]] = []
    fail_to_pass = set(test.fail_to_pass)
    for node in [*test.fail_to_pass, *test.pass_to_pass]:
        o = at_base.outcomes.get(node, {"outcome": "not_run", "message": "not run", "duration_ms": 0.0})
        passed = o["outcome"] in PASSED
        f2p = node in fail_to_pass
        reason = None
        if f2p and passed:
            reason = "passes at the base commit with the test patch: not a fail-to-pass test"
        elif not f2p and not passed:
            reason = (f"{o['outcome']} at the base commit with the test patch, where a pass-to-pass test must pass: "
                      + " | ".join(str(o["message"]).splitlines())[:300])
        if reason:
            broken.append({"test": node, "reason": reason})
        rows.append({"test": node, "kind": "repo_tests", "group": "fail_to_pass" if f2p else "pass_to_pass",
                     "outcome": o["outcome"], "broken": reason is not None, "message": reason or o["message"],
                     "duration_ms": o["duration_ms"]})
    return rows, broken, None


async def _prepare(task: Task, test: RepoTestsTest, cfg: VerifierConfig,
                   python: str) -> tuple[RepoJudge, EvaluationProvenance] | EvaluationResult:
    """The base snapshot, the environment, the sandbox: what every candidate's run shares (or the
    task's failure: a repository that cannot be read is the task's fault, named by its field)."""
    from oracle.errors import RepositoryError
    from oracle.repo import base as repo_base
    from oracle.repo import worktree

    repo = task.repository
    assert repo is not None
    try:
        base = await asyncio.to_thread(repo_base.snapshot, repo.path, repo.bundle, repo.commit,
                                       cache_root=Path(cfg.repo_cache) if cfg.repo_cache else None,
                                       subdir=repo.subdir)
        # The test patch must apply to the base (the task's fault, said once, when it does not).
        await asyncio.to_thread(base.with_test_patch, task.test_patch)
    except RepositoryError as exc:
        return EvaluationResult.failure("verifier", str(exc), error_type="TaskValidationError")
    env, source = environments.named(task.environment, cfg)
    run_env = await asyncio.to_thread(environments.prepare, env, source, cfg, python)
    pytest = await asyncio.to_thread(pinned_pytest.source, run_env.python, run_env.sys_path, run_env.mounts)
    sandbox = await asyncio.to_thread(_sandbox, cfg, run_env, pytest)
    place = await asyncio.to_thread(worktree.choose_parent, base)  # tmpfs when the base fits, else disk
    layers = dict(sandbox.provenance())
    provenance = EvaluationProvenance(mode="tests", execution=Execution(
        code_run=True, integrity="shared_process", isolation_level=layers.pop("isolation_level", None),
        backend=layers.pop("backend", None), backend_version=layers.pop("backend_version", None),
        interpreters={"python": run_env.python}, languages_supported=["python"], sandbox_layers=layers,
        environment=run_env.record, pytest_version=pytest.version, pytest_origin=pytest.origin,
        repository={"commit": base.commit, "file_count": base.file_count, "test_edits": cfg.repo_test_edits,
                    "hook_edits": cfg.repo_hook_edits,
                    "install": task.environment.install if task.environment else "pythonpath",
                    "trees": place.kind, "trees_because": place.reason, **_report_source(test)}))
    judge = RepoJudge(task, test, cfg, sandbox, run_env, pytest, base, place.parent)
    return judge, provenance


def _report_source(test: RepoTestsTest) -> dict[str, str]:
    """Where the outcomes come from, said where a user reads the result: pytest's report through the
    channel, or the JUnit XML a custom ``command`` writes (weaker: the candidate's process writes it)."""
    from oracle.tasks.testspec import runs_pytest

    if runs_pytest(test.command):
        return {"report_source": "plugin",
                "report_source_note": "pytest's own report, through a channel opened before collection"}
    return {"report_source": "junit",
            "report_source_note": f"the JUnit XML the command writes ({test.junit_xml}): weaker evidence, the "
                                  "candidate's process writes that file (checked: new, complete, agreeing with the "
                                  "exit status)"}


def _sandbox(cfg: VerifierConfig, run_env: environments.RunEnvironment,
             pytest: pinned_pytest.PytestSource) -> Sandbox:
    limits = SandboxLimits(timeout_s=cfg.repo_timeout_s, memory_mb=cfg.memory_mb, max_pids=cfg.max_pids,
                           output_limit_bytes=cfg.output_limit_bytes, disk_mb=cfg.disk_mb)
    extra = tuple(sorted({*run_env.mounts, *((pytest.path,) if pytest.path else ())}))
    return Sandbox(backend=cfg.backend, limits=limits, allow_weak_isolation=cfg.allow_weak_isolation,
                   extra_ro_paths=extra)


def _explain(candidates: list[CandidateResult], best: list[str]) -> str:
    resolved = [c.id for c in candidates if c.passed]
    text = (f"{len(resolved)} of {len(candidates)} candidates resolved the task" if resolved
            else f"no candidate resolved the task (0 of {len(candidates)}); no best candidate")
    if best:
        text += f"; best: {', '.join(best)}" + (" (tied)" if len(best) > 1 else "")
    for c in candidates:
        if not c.passed and c.status != Status.failed:
            text += (f". {c.id}: fail-to-pass {c.details['fail_to_pass']}, pass-to-pass {c.details['pass_to_pass']}"
                     + (f": {c.details['summary'][:200]}" if c.details.get("summary") else ""))
    return text
