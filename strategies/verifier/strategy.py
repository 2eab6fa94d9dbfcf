"""The verifier: run each candidate's code against the task's tests in the sandbox, or check a
non-code answer against the task's reference.

Faults on our side that hit every candidate (no usable sandbox, the task's language unsupported,
the harness never starting, every test of every candidate erroring identically) give a ``failed``
result with the reason; a candidate is never scored 0 for them. A fault while judging one candidate
stays that candidate's (containment.py): its test is ``error`` with the reason, and when the fault
was ours (a sandbox failure on one of its runs) the candidate is left unscored with a
``sandbox_failure`` concern while the others are judged. Runs go in parallel, bounded by
``verifier.workers`` (default: cores).

A test that is broken (the task's fault: it does not compile, raised before asking the candidate
anything, fails on the task's reference solution ``task.solution``, which runs first) is scored for
no candidate and reported once in ``result.broken_tests`` (broken.py decides, solution.py runs the
reference); a task whose every test is broken fails with the reasons.
"""

from __future__ import annotations

import asyncio
import os
import re
import shutil
import threading
import time
import weakref
from pathlib import Path
from typing import Any

from oracle.config.model import OracleConfig, VerifierConfig
from oracle.errors import InterpreterUnusable, OracleError, SandboxError
from oracle.results.provenance import EvaluationProvenance, Execution, Integrity
from oracle.results.result import BrokenTest, CandidateResult, EvaluationResult, Status
from oracle.strategies.protocol import EvaluationContext
from oracle.tasks.environment import Environment
from oracle.tasks.task import Task, Trajectory
from oracle.tasks.testspec import TRAJECTORY_KINDS, CheckTest, PytestTest, ReferenceCheck, RepoTestsTest
from oracle.strategies.verifier import broken, containment, harness, pytest_suite, reference, repo_tests, scoring
from oracle.strategies.verifier import solution
from oracle.strategies.verifier import environments
from oracle.strategies.verifier.runner import CodeRunner
from oracle.strategies.verifier import concerns as verifier_concerns
from oracle.strategies.verifier import trajectory_checks as trajectory_tests
from oracle.strategies.verifier.extract import SUPPORTED_LANGUAGES, ExtractedCode, extract_code, normalize_language
from oracle.sandbox import Sandbox, SandboxLimits
from oracle.sandbox import interpreters as interpreter_checks
from oracle.sandbox.limits import check_timeouts
from oracle.sandbox.runs import run_in_pool
from oracle.sandbox.workers import WorkerPool
from oracle.sandbox.pinned_pytest import PytestSource
from oracle.sandbox import pinned_pytest

VERSION = "1.3"
"""1.1: trajectory checks (tool_calls, tool_result, final_state); 1.2: broken tests (the task's
fault, scored for nobody) and the reference solution (``task.solution``) run first; 1.3: candidate
patches to a repository, judged by its own tests (repo_tests.py)."""
PYTHON_CANDIDATES = interpreter_checks.SYSTEM_PYTHONS


def _usable(path: str | None) -> bool:
    return interpreter_problem(path) is None


def interpreter_problem(path: str | None, *, python: bool = False) -> str | None:
    """Why the sandbox user cannot run ``path`` (None when it can): the first directory it cannot
    enter and its mode, a file that is missing or not executable. ``python``: also the venv and the
    base installation the interpreter needs (oracle/sandbox/interpreters.py)."""
    if not path:
        return "not found"
    if python:
        return interpreter_checks.problem(path)
    if not os.path.isfile(path) or not os.access(path, os.X_OK):
        return f"{path} is not an executable file"
    return interpreter_checks.unreadable(path, need_exec=True)


def find_interpreter(language: str, cfg: VerifierConfig) -> str | None:
    """The executable for ``language`` that a sandbox uid can run, or None (``interpreter_status``
    says why)."""
    return interpreter_status(language, cfg)[0]


def interpreter_status(language: str, cfg: VerifierConfig,
                       environment: Environment | None = None) -> tuple[str | None, str | None]:
    """``(path, None)`` for the executable that runs ``language`` here, else ``(None, why)`` with the
    exact reason and the fix. ``environment``: a task's, which replaces ``verifier.environment``.

    An answer found is kept per setting and PATH: every evaluation asks for every language (about
    0.4 ms of path walks and stats each time). A refusal is not kept: a fix made later is seen.
    """
    env, source = environments.named(environment, cfg)
    key = (language, cfg.python_executable, cfg.node_executable, env, source, os.environ.get("PATH", ""))
    found = _FOUND.get(key)
    if found is None:
        found, why = _find_interpreter(language, cfg, env, source, key[-1])
        if found is None:
            return None, why
        _FOUND[key] = found
    return found, None


_FOUND: dict[tuple, str] = {}


def _find_interpreter(language: str, cfg: VerifierConfig, env: Environment | None, source: str,
                      search_path: str) -> tuple[str | None, str | None]:
    if language == "python":
        try:
            return environments.python_for(env, source, cfg), None
        except InterpreterUnusable as exc:
            return None, str(exc)
    if language == "javascript":
        path = cfg.node_executable or shutil.which("node", path=search_path or None)
        if path is None:
            return None, "node is not installed (not on PATH; set verifier.node_executable)"
        why = interpreter_problem(path)
        if why:
            setting = "verifier.node_executable: " if cfg.node_executable else ""
            return None, f"{setting}{why}; install node where other users can read it"
        return path, None
    return None, f"the verifier does not run {language!r}"


_NO_CODE = ExtractedCode(None, None, "python")
"""For tasks whose tests all check trajectories: no code is looked for."""


def _prefix_outside_usr(executable: str) -> str | None:
    real = Path(os.path.realpath(executable))
    if str(real).startswith("/usr/"):
        return None
    return str(real.parents[1])  # <prefix>/bin/node -> <prefix>


class VerifierStrategy:
    """Test-running verifier (see module docstring)."""

    name = "verifier"
    version = VERSION

    def __init__(self) -> None:
        """No settings here: each evaluation runs under ``ctx.config.verifier``; warm worker pools
        are kept per distinct sandbox setting."""
        self._pools: dict[tuple, WorkerPool] = {}
        self._lock = threading.Lock()
        self._finalizer = weakref.finalize(self, _close_pools, self._pools)

    def _pool(self, cfg: VerifierConfig, interpreters: dict[str, str],
              run_env: environments.RunEnvironment | None = None, pytest: PytestSource | None = None) -> WorkerPool:
        """The warm worker pool for these sandbox settings and this environment (made once, reused
        across tasks: the environment's mounts and sys.path are part of its key). With ``pytest`` (a
        task with pytest tests), its directory is mounted read-only too."""
        if run_env is None:
            python = interpreters.get("python") or find_interpreter("python", cfg)
            if python is None:
                raise SandboxError("the verifier needs a Python interpreter the sandbox uid can run")
            run_env = environments.prepare(None, "default", cfg, python)
        others = [e for lang, e in interpreters.items() if lang != "python"]
        extra = tuple(sorted({*run_env.mounts, *(p for p in map(_prefix_outside_usr, others) if p),
                              *((pytest.path,) if pytest is not None and pytest.path else ())}))
        # The pinned copy is loaded once per test worker, before its first fork (runtime/zygote.py).
        preload = (pytest.path,) if pytest is not None and pytest.path and pytest.origin == "pinned" else ()
        key = (cfg.backend, cfg.allow_weak_isolation, cfg.memory_mb, cfg.max_pids, cfg.output_limit_bytes,
               cfg.disk_mb, cfg.workers, run_env.key, extra, preload)
        with self._lock:
            pool = self._pools.get(key)
            if pool is None or pool.closed:
                limits = SandboxLimits(timeout_s=cfg.timeout_s, memory_mb=cfg.memory_mb, max_pids=cfg.max_pids,
                                       output_limit_bytes=cfg.output_limit_bytes, disk_mb=cfg.disk_mb)
                sandbox = Sandbox(backend=cfg.backend, limits=limits, allow_weak_isolation=cfg.allow_weak_isolation,
                                  extra_ro_paths=extra)
                pool = self._pools[key] = WorkerPool(sandbox, run_env.python, cfg.workers or os.cpu_count() or 1,
                                                     sys_path=run_env.sys_path, node_path=run_env.node_path,
                                                     test_preload=preload)
            return pool

    def close(self) -> None:
        """Stop the warm sandbox workers (they also die with this process)."""
        _close_pools(self._pools)

    def spec(self, config: OracleConfig) -> dict[str, Any]:
        defaults = VerifierConfig().model_dump()
        changed = {k: v for k, v in config.verifier.model_dump().items() if defaults.get(k) != v}
        return {"name": self.name, "version": self.version, **changed}

    async def evaluate(self, ctx: EvaluationContext) -> EvaluationResult:
        started = time.monotonic()
        cfg = ctx.config.verifier
        try:
            if ctx.task.tests:
                result = await self._run_tests(ctx, cfg)
            elif ctx.task.reference is not None:
                result = self._check_references(ctx)
            else:
                result = EvaluationResult.failure(
                    "verifier", "the verifier needs task.tests or task.reference; this task has neither",
                    error_type="TaskValidationError")
        except OracleError as exc:
            result = EvaluationResult.failure("verifier", exc)
        except Exception as exc:  # noqa: BLE001 - a harness crash is our fault, never the candidate's
            result = EvaluationResult.failure("verifier", f"verifier crashed: {type(exc).__name__}: {exc}",
                                              error_type="HarnessCrash")
        result.latency_ms = (time.monotonic() - started) * 1000
        result.provenance.evaluator = result.provenance.evaluator or self.spec(ctx.config)
        result.provenance.config_hash = result.provenance.config_hash or ctx.config.hash()
        result.concerns = verifier_concerns.concerns(result, [t.id for t in ctx.trajectories])
        return result

    # -- reference answers ---------------------------------------------------------------------
    def _check_references(self, ctx: EvaluationContext) -> EvaluationResult:
        check = ctx.task.reference_check or ReferenceCheck()
        ref = ctx.task.reference or ""
        problem = reference.validate_reference(ref, check)
        if problem:
            return EvaluationResult.failure("verifier", problem, error_type="TaskValidationError")
        candidates = []
        for t in ctx.trajectories:
            try:
                v = reference.check_answer(t.answer, ref, check)
            except Exception as exc:  # noqa: BLE001 - this answer broke the check: its error, not the task's
                candidates.append(CandidateResult(id=t.id, score=0.0, passed=False, details={
                    "reference_check": check.mode, "outcome": "error",
                    "message": f"the answer could not be checked: {containment.describe(exc)}"}))
                continue
            candidates.append(CandidateResult(id=t.id, score=1.0 if v.passed else 0.0, passed=v.passed,
                                              details={"reference_check": check.mode, "message": v.message}))
        best, ranking, ties = scoring.rank(candidates)
        best = scoring.passing_best(best, candidates)
        return EvaluationResult(
            evaluator="verifier", status=Status.ok, best=best, ranking=ranking, candidates=candidates,
            details={"mode": "reference", "reference_check": check.model_dump(), "ties": ties,
                     "tie_break": "input order", "none_passed": not any(c.passed for c in candidates)},
            explanation=_explain(candidates, best, ties),
            provenance=EvaluationProvenance(mode="reference",
                                            execution=Execution(code_run=False, integrity="reference")))

    # -- tests ---------------------------------------------------------------------------------
    async def _run_tests(self, ctx: EvaluationContext, cfg: VerifierConfig) -> EvaluationResult:
        task = ctx.task
        too_long = check_timeouts(task.tests, cfg)
        if too_long:
            return EvaluationResult.failure("verifier", too_long, error_type="TaskValidationError")
        if any(isinstance(t, CheckTest) for t in task.tests) and not task.entry_point:
            return EvaluationResult.failure("verifier", "task.entry_point: required by check(candidate) tests",
                                            error_type="TaskValidationError")
        if task.repository is not None and any(isinstance(t, RepoTestsTest) for t in task.tests):
            python, why = interpreter_status("python", cfg, task.environment)  # candidate patches to a repository
            if python is None:
                return EvaluationResult.failure("verifier", f"python: {why}", error_type="InterpreterUnusable")
            return await repo_tests.evaluate(ctx, cfg, python)
        # Trajectory checks read the steps, not the code: a candidate needs code only for code tests.
        code_tests = {i for i, t in enumerate(task.tests) if t.kind not in TRAJECTORY_KINDS}
        # Per candidate, why its code tests cannot run (extraction failed, a language this machine
        # cannot run); ours=True when that is our limit, not the candidate's choice. The task fails
        # for it only when it holds for every candidate that has code.
        unrunnable: dict[str, tuple[str, bool]] = {}
        extracted: dict[str, ExtractedCode] = {}
        for t in ctx.trajectories:
            if not code_tests:
                extracted[t.id] = _NO_CODE
                continue
            try:
                extracted[t.id] = extract_code(t, task)
            except Exception as exc:  # noqa: BLE001 - odd input broke extraction: this candidate's error
                extracted[t.id] = ExtractedCode(None, None, task.language or "python")
                unrunnable[t.id] = (f"its code could not be extracted: {containment.describe(exc)}", False)
        languages = sorted({e.language for e in extracted.values() if e.code is not None})
        interpreters: dict[str, str] = {}
        status = {lang: interpreter_status(lang, cfg, task.environment) for lang in SUPPORTED_LANGUAGES}
        supported_here = [lang for lang in SUPPORTED_LANGUAGES if status[lang][0]]
        missing: dict[str, str] = {}
        unusable: set[str] = set()
        """Languages whose interpreter is named or installed but the sandbox user cannot run it."""
        for lang in languages:
            exe, why = status.get(lang, (None, None))
            if exe is not None:
                interpreters[lang] = exe
            elif lang == "python" or (why and not why.startswith("node is not installed")):
                missing[lang] = f"language {lang!r} cannot run here: {why}"
                unusable.add(lang)
            else:
                missing[lang] = (f"language {lang!r} is not supported on this machine; supported here: "
                                 f"{supported_here} (of {list(SUPPORTED_LANGUAGES)})")
        python_exe, python_why = status["python"]
        needs_sandbox = bool(code_tests) or any(t.kind == "final_state" for t in task.tests)
        task_language = normalize_language(task.language)
        if task_language in missing or (needs_sandbox and python_exe is None):
            # The task's own language cannot run here, or the sandbox's own runtime (Python) cannot:
            # that hits every candidate.
            lang = task_language if task_language in missing else "python"
            message = missing.get(lang) or f"the sandbox runtime needs a Python interpreter: {python_why}"
            return EvaluationResult.failure(
                "verifier", message,
                error_type="InterpreterUnusable" if lang in unusable or lang == "python" else "UnsupportedLanguage",
                provenance=EvaluationProvenance(
                    mode="tests", execution=Execution(code_run=False, languages_supported=supported_here)))
        in_process = task.execution == "in_process" and bool(code_tests)
        if in_process and not cfg.allow_in_process:
            return EvaluationResult.failure(
                "verifier", "task.execution: 'in_process' runs the tests inside the candidate's own process, "
                            "where a candidate can forge its verdict; it also needs verifier.allow_in_process: true",
                error_type="TaskValidationError")
        if in_process and languages and "python" not in interpreters:
            return EvaluationResult.failure("verifier", "task.execution: 'in_process' is available for Python only",
                                            error_type="TaskValidationError")
        for tid, code in extracted.items():
            if code.code is None or tid in unrunnable:
                continue
            if code.language in missing:
                # Ours when the machine lacks a language the verifier supports; the candidate's when
                # it answered in one the verifier does not run at all.
                unrunnable[tid] = (missing[code.language], code.language in SUPPORTED_LANGUAGES)
            elif in_process and code.language != "python":
                unrunnable[tid] = ("task.execution: 'in_process' is available for Python only", False)
        reference_code = _reference_code(task) if task.solution is not None and code_tests else None
        if isinstance(reference_code, str):
            return EvaluationResult.failure("verifier", reference_code, error_type="TaskValidationError")
        if reference_code is not None:
            exe = find_interpreter(reference_code.language, cfg)
            if exe is None:
                return EvaluationResult.failure(
                    "verifier", f"{solution.FIELD}: the reference solution is {reference_code.language!r}, which "
                                f"this machine cannot run; supported here: {supported_here}",
                    error_type="UnsupportedLanguage")
            interpreters.setdefault(reference_code.language, exe)
        integrity: Integrity = "in_process" if in_process else "isolated"
        pytest = None
        if not code_tests and not any(t.kind == "final_state" for t in task.tests):
            pool = None  # data checks only: nothing runs, no sandbox needed
            provenance = EvaluationProvenance(mode="tests", execution=Execution(code_run=False, integrity="trajectory"))
        else:
            env, source = environments.named(task.environment, cfg)
            assert python_exe is not None
            run_env = await asyncio.to_thread(environments.prepare, env, source, cfg, python_exe)
            # The test side's pytest: the environment's when it has one, else the pinned copy.
            pytest = await asyncio.to_thread(pinned_pytest.source, run_env.python, run_env.sys_path, run_env.mounts) \
                if any(isinstance(t, PytestTest) for t in task.tests) else None
            pool = await asyncio.to_thread(self._pool, cfg, interpreters, run_env, pytest)
            layers = dict(pool.sandbox.provenance())
            provenance = EvaluationProvenance(mode="tests", execution=Execution(
                code_run=True, integrity=integrity, isolation_level=layers.pop("isolation_level", None),
                backend=layers.pop("backend", None), backend_version=layers.pop("backend_version", None),
                interpreters=interpreters, languages_supported=supported_here, sandbox_layers=layers,
                environment=run_env.record, pytest_version=pytest.version if pytest else None,
                pytest_origin=pytest.origin if pytest else None))
        prompt_code = harness.prompt_definitions(task.prompt) if task.language in (None, "python") else None
        runner = CodeRunner(pool, cfg, task.entry_point, prompt_code, interpreters, in_process, integrity, run_in_pool,
                            module=task.module, pytest=pytest)
        by_id = {t.id: t for t in ctx.trajectories}

        reference_run = None
        if reference_code is not None:  # the tests run on the reference first (solution.py)
            reference_run = await self._reference(task, runner, reference_code)
            if reference_run.problem is not None:
                return EvaluationResult.failure("verifier", reference_run.problem, error_type="TaskValidationError",
                                                provenance=provenance, calls=reference_run.runs)

        async def judge(tid: str, index: int) -> harness.TestOutcome:
            test = task.tests[index]
            if not isinstance(test, harness.CODE_TESTS):
                return await trajectory_tests.run(test, index, by_id[tid], pool, cfg)
            return await runner.run(test, index, extracted[tid])

        faults = containment.Faults()

        async def run_one(tid: str, index: int) -> harness.TestOutcome:
            return await containment.judge_safely(tid, index, task.tests[index], lambda: judge(tid, index), faults)

        jobs = [(t.id, i) for t in ctx.trajectories for i in range(len(task.tests))
                if i not in code_tests or (extracted[t.id].code is not None and t.id not in unrunnable)]
        results = await asyncio.gather(*(run_one(tid, i) for tid, i in jobs), return_exceptions=True)
        for r in results:
            if isinstance(r, BaseException):  # cancellation, KeyboardInterrupt: never contained
                raise r
        calls = len(jobs) + (reference_run.runs if reference_run is not None else 0)
        if jobs and sum(len(v) for v in faults.sandbox.values()) == len(jobs):
            # Every run's sandbox failed: ours, and it hit every candidate.
            assert faults.first_sandbox_error is not None
            return EvaluationResult.failure("verifier", faults.first_sandbox_error, provenance=provenance,
                                            calls=calls)
        by_candidate: dict[str, dict[int, harness.TestOutcome]] = {}
        for (tid, i), outcome in zip(jobs, results):
            by_candidate.setdefault(tid, {})[i] = outcome  # type: ignore[assignment]
        for tid, outs in by_candidate.items():  # no verdict through our fault, even after the reruns
            for outcome in outs.values():
                if outcome.our_fault:
                    faults.sandbox.setdefault(tid, []).append(f"{outcome.name}: {outcome.message}")
        every = {t.id: _every_test(by_candidate.get(t.id, {}), task.tests, unrunnable.get(t.id))
                 for t in ctx.trajectories}
        reference_outcomes = dict(reference_run.outcomes) if reference_run is not None else None
        pytest_suite.align_runs(task.tests, every, reference_outcomes)
        decision = broken.decide(every, reference_outcomes)
        broken_tests = [BrokenTest(test=b.test, reason=b.reason) for b in decision.broken]
        if decision.all_broken:
            listed = "; ".join(f"{b.test}: {b.reason}" for b in broken_tests[:5])
            hint = _environment_hint([b.reason for b in broken_tests], pool)
            return EvaluationResult.failure(
                "verifier", f"every test of this task is broken (the task's fault, not the candidates'): {listed}"
                            + (f" ({hint})" if hint else ""),
                error_type="BrokenTests", provenance=provenance, calls=calls, broken_tests=broken_tests,
                details={**_reference_details(reference_run), **({"environment_hint": hint} if hint else {})})
        candidates = [self._candidate(t.id, extracted[t.id], decision.flat(t.id), unrunnable.get(t.id),
                                      faults.sandbox.get(t.id),
                                      [o for _, o in sorted(by_candidate.get(t.id, {}).items()) if o.cases])
                      for t in ctx.trajectories]
        ran = {tid: [c for i, o in outs.items() if (tid, i) not in faults.judged for c in harness.flatten(o)]
               for tid, outs in by_candidate.items()}
        infra = _identical_errors({tid: outs for tid, outs in ran.items() if outs})
        if infra:
            return EvaluationResult.failure(
                "verifier", f"every test errored identically for every candidate, which points at the "
                            f"environment, not the candidates: {infra}",
                error_type="SandboxError", provenance=provenance, calls=calls,
                details={"candidates_unscored": [c.model_dump() for c in candidates]})
        if provenance.execution is not None:
            for outs in by_candidate.values():
                for o in outs.values():
                    for rerun in o.reruns:
                        reason = str(rerun.get("reason"))
                        provenance.execution.reruns[reason] = provenance.execution.reruns.get(reason, 0) + 1
        ours = {tid for tid, (_, is_ours) in unrunnable.items() if is_ours} | set(faults.sandbox)
        if ours and all(c.id in ours for c in candidates):
            first = faults.first_sandbox_error
            hit = next((faults.sandbox[c.id][0] for c in candidates if faults.sandbox.get(c.id)), None)
            message = (f"the sandbox failed for every candidate: {containment.describe(first)}" if first else
                       f"the sandbox could give no candidate a verdict: {hit}" if hit else
                       f"no candidate could be run here: {unrunnable[min(ours)][0]}")
            return EvaluationResult.failure(
                "verifier", message, error_type="SandboxError" if first or hit else "UnsupportedLanguage",
                provenance=provenance, calls=calls, broken_tests=broken_tests,
                details={"candidates_unscored": [c.model_dump() for c in candidates]})
        best, ranking, ties = scoring.rank(candidates)
        best = scoring.passing_best(best, candidates)
        details: dict[str, Any] = {"mode": "tests", "tests": len(task.tests), "ties": ties, "tie_break": "input order",
                                   "none_passed": not any(c.passed for c in candidates),
                                   **_reference_details(reference_run)}
        if broken_tests:  # what the candidates were scored on: neither broken nor neutral (skipped on the reference)
            details["scored_tests"] = max((int(c.details.get("total_tests", 0)) for c in candidates), default=0)
        if faults.sandbox:
            details["sandbox_failures"] = faults.sandbox
        unsupported = {tid: why for tid, (why, is_ours) in unrunnable.items() if is_ours}
        if unsupported:
            details["unrunnable_here"] = unsupported
        hint = _environment_hint([str(t.get("message", "")) for c in candidates for t in c.details.get("tests", [])]
                                 + [b.reason for b in broken_tests], pool)
        if hint:
            details["environment_hint"] = hint
        return EvaluationResult(
            evaluator="verifier", status=Status.ok, best=best, ranking=ranking, candidates=candidates,
            calls=calls, cost_usd=0.0, provenance=provenance, details=details, broken_tests=broken_tests,
            explanation=_explain(candidates, best, ties, broken_tests))

    async def _reference(self, task: Task, runner: CodeRunner, code: ExtractedCode) -> solution.ReferenceRun:
        """The tests on ``task.solution`` (cached per task content and run settings, solution.py)."""
        indices = [i for i, t in enumerate(task.tests) if isinstance(t, harness.CODE_TESTS)]

        async def run(i: int) -> harness.TestOutcome:
            test = task.tests[i]
            try:
                return await runner.run(test, i, code)  # type: ignore[arg-type]
            except Exception as exc:  # noqa: BLE001 - a fault of ours on the reference: says nothing of the test
                return solution.unverified(test, i, exc)

        key = runner.cache_key(task.content_hash(), VERSION, code.language)
        return await solution.reference_run(key, code, indices, run)

    def _candidate(self, cid: str, code: ExtractedCode, outcomes: list[harness.TestOutcome],
                   unrunnable: tuple[str, bool] | None = None,
                   sandbox_failures: list[str] | None = None,
                   suites: list[harness.TestOutcome] | None = None) -> CandidateResult:
        """Score one candidate on its outcomes (flattened, as broken.py adjusted them); ``suites``:
        its pytest runs as wholes, whose messages say what each collected. When a fault of ours
        kept some of its tests from a verdict (a sandbox failure, an interpreter this machine lacks),
        it is left unscored (``status=failed``): never a 0 presented as its fault."""
        score, passed = scoring.score_tests(outcomes)
        counted = scoring.scored(outcomes)
        failing = [o for o in counted if o.outcome not in scoring.PASSED]
        details: dict[str, Any] = {
            "tests": [o.as_dict() for o in outcomes], "language": code.language,
            "code_source": code.source, "joined_prompt": code.joined_prompt,
            "passed_tests": len(counted) - len(failing), "total_tests": len(counted)}
        not_scored = len(outcomes) - len(counted)
        if not_scored:
            details["not_scored_tests"] = not_scored
        if suites:  # what each suite's run said as a whole (counts, candidate names it did not collect)
            details["suites"] = [{"name": o.name, "cases": len(o.cases), "message": o.message} for o in suites]
        if failing:  # one line each (a pytest failure's message holds its assertion diff, over lines)
            line = lambda o: f"{o.name}: {o.outcome}: {' | '.join(o.message.splitlines())}"  # noqa: E731
            details["summary"] = "; ".join(line(o) for o in failing[:3])
            details["first_failure"] = line(failing[0])
        ours = list(sandbox_failures or []) + ([unrunnable[0]] if unrunnable and unrunnable[1] else [])
        if ours:
            details["unscored_because"] = ours
            return CandidateResult(id=cid, score=None, passed=None, status=Status.failed, details=details)
        undecided = [o for o in outcomes if o.undecided]
        if undecided:  # a test that cannot be judged for it (broken.py): never a pass, never a 0
            details["unscored_because"] = [f"{o.name}: {o.message}" for o in undecided[:3]]
            return CandidateResult(id=cid, score=None, passed=None, status=Status.abstained, details=details)
        if score is None:  # every test it ran was skipped as on the reference: nothing to score it on
            details["unscored_because"] = ["no test gave it a verdict (every one was broken or skipped as on "
                                           "the reference solution)"]
            return CandidateResult(id=cid, score=None, passed=None, status=Status.abstained, details=details)
        return CandidateResult(id=cid, score=score, passed=passed, details=details)


_NO_CODE_WHY = "no code found (no code field, no fenced block, the answer does not parse as code)"


def _every_test(ran: dict[int, harness.TestOutcome], tests: list,
                unrunnable: tuple[str, bool] | None) -> dict[int, harness.TestOutcome]:
    """A candidate's outcome for every test: its runs, and for a test that did not run (no code,
    extraction failed, a language this machine cannot run) an ``error`` with why, which says
    nothing about the test itself (``before_test``)."""
    why = unrunnable[0] if unrunnable else _NO_CODE_WHY
    return {i: ran[i] if i in ran else harness.TestOutcome(harness.test_name(t, i), t.kind, "error", why, 0.0,
                                                           t.weight, before_test=True)
            for i, t in enumerate(tests)}


def _reference_code(task: Task) -> ExtractedCode | str:
    """``task.solution`` as the program to run (extracted like a candidate's code), or why not."""
    try:
        code = extract_code(Trajectory(id="reference", code=task.solution), task)
    except Exception as exc:  # noqa: BLE001 - odd input: the task's fault, said as such
        return f"{solution.FIELD}: its code could not be read: {containment.describe(exc)}"
    return code if code.code is not None else f"{solution.FIELD}: no code to run"


def _reference_details(run: solution.ReferenceRun | None) -> dict[str, Any]:
    if run is None:
        return {}
    outcomes = {o.name: o.outcome for i in sorted(run.outcomes) for o in harness.flatten(run.outcomes[i])}
    return {"reference_solution": {"cached": run.cached, "runs": run.runs, "outcomes": outcomes}}


def _close_pools(pools: dict) -> None:
    for pool in list(pools.values()):
        pool.close()
    pools.clear()


_MISSING_MODULE = re.compile(r"No module named '([A-Za-z_][\w.]*)'")


def _environment_hint(messages: list[str], pool: Any) -> str | None:
    """Where a module is missing and the task names no environment, say how to name one: the
    commonest first-contact reason that every candidate, or the tests themselves, fail to import."""
    missing = sorted({m for text in messages for m in _MISSING_MODULE.findall(text)})
    if not missing or pool is None or pool.spec_extra.get("sys_path"):
        return None
    return (f"{', '.join(missing[:5])} is not installed for the sandbox's interpreter; a task whose tests or "
            "candidates need packages names them in task.environment.requirements")
_ENVIRONMENT_ERROR = re.compile(r"ModuleNotFoundError|ImportError|PermissionError|FileNotFoundError|OSError|"
                                r"the program ended|killed|limit")


def _identical_errors(by_candidate: dict[str, list[harness.TestOutcome]]) -> str | None:
    """The shared message when >= 2 candidates ran, every test errored the same way, and the error is
    of the kind the environment causes (missing module, permission, the process dying). Several
    samples of one model can share a plain bug (a NameError in every sample); that stays theirs."""
    if len(by_candidate) < 2:
        return None
    outcomes = [o for outs in by_candidate.values() for o in outs]
    if outcomes and all(o.outcome == "error" for o in outcomes) and len({o.message for o in outcomes}) == 1 \
            and _ENVIRONMENT_ERROR.search(outcomes[0].message):
        return outcomes[0].message
    return None


def _explain(candidates: list[CandidateResult], best: list[str], ties: list[list[str]],
             broken_tests: list[BrokenTest] | None = None) -> str:
    n_pass = sum(1 for c in candidates if c.passed)
    text = f"{n_pass} of {len(candidates)} candidates passed everything"
    if n_pass == 0:
        text = f"no candidate passed (0 of {len(candidates)}); no best candidate"
    if best:
        text += f"; best: {', '.join(best)}" + (" (tied)" if len(best) > 1 else "")
    if broken_tests:
        text += (f"; {len(broken_tests)} broken test(s) scored for nobody (the task's fault): "
                 + "; ".join(f"{b.test}: {b.reason}" for b in broken_tests[:3]))
    for c in candidates:
        if not c.passed and c.details.get("summary"):
            text += f". {c.id} failed: {c.details['summary']}"
    return text
