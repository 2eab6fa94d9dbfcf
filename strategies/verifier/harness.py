"""Turn one (candidate code, test) pair into a run plan, and the run's result into a verdict.

The verdict comes from evidence the candidate cannot forge: the test process's report (``pass``,
``fail``, ``error``, or a ``value`` the host compares with ``expected``) for call/assert/check
tests, and the candidate's stdout compared here for io tests. No line of the candidate's output is
ever parsed for a verdict.

Outcomes: ``pass``; ``fail`` (the test ran and said no: assertion, wrong value, wrong output);
``error`` (the candidate crashed, could not load, exited, exceeded memory or output, broke the
channel, returned what may not cross); ``timeout`` (wall clock); ``broken`` (the test's own fault,
seen before any candidate code ran: it does not compile, imports what the test side lacks, a fixture
failed, it collected nothing); and, for pytest tests, ``skipped``, ``xfailed`` and ``xpassed``. Only
``pass`` (and ``xpassed``) can ever count as passed; what a skip or a broken test means for a score
is decided over all candidates (and the task's reference solution), not per run.
"""

from __future__ import annotations

import ast
import dataclasses
import functools
import re
from dataclasses import dataclass
from typing import Any

from oracle.tasks.testspec import AssertTest, CallTest, CheckTest, FinalStateTest, IoTest, PytestTest
from oracle.strategies.verifier.comparison import show, value_mismatch, values_equal  # noqa: F401 (re-exported)
from oracle.sandbox.runs import RunPlan, RunResult
from oracle.sandbox.runtime import handover, wire
from oracle.strategies.verifier import pytest_suite

CodeTest = AssertTest | CallTest | CheckTest | IoTest | PytestTest
"""Tests that run the candidate's code."""
CODE_TESTS = (AssertTest, CallTest, CheckTest, IoTest, PytestTest)
Test = CodeTest | FinalStateTest
"""Tests whose verdict comes from a sandbox run (``final_state`` runs the test's code on the
trajectory's data)."""
_PROMPT_NODES = (ast.Import, ast.ImportFrom, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Assign,
                 ast.AnnAssign)


@dataclass(frozen=True)
class TestOutcome:
    """The verdict of one test on one candidate."""

    name: str
    kind: str
    outcome: str
    message: str
    duration_ms: float
    weight: float
    integrity: str = "isolated"
    our_fault: bool = False
    """No verdict, through no fault of the candidate (its worker was found changed by another run, or
    it was starved of CPU, even after the reruns): the candidate is left unscored, never given a 0."""
    tampering: tuple[str, ...] = ()
    """What this candidate's run changed in its sandbox worker (the run is an ``error``)."""
    reruns: tuple[dict, ...] = ()
    """Attempts that did not count, and why (``worker_tampered``, ``starved``)."""
    node_id: str | None = None
    """A pytest test's node id (``test_x.py::TestA::test_b[1]``); None for the other kinds."""
    cases: tuple["TestOutcome", ...] = ()
    """A test that is a suite (``pytest``): one outcome per collected test; this outcome then only
    carries the run's own facts (reruns, our_fault, tampering) and is never scored itself."""
    before_test: bool = False
    """The run ended before the test's code ran (the candidate did not load, had no code): it says
    nothing about whether the test itself is broken (broken.py)."""
    neutral: bool = False
    """A skip or xfail that the task's reference solution shows too: not scored (broken.py)."""
    after_answers: bool = False
    """A ``broken`` outcome found after the candidate could have steered the test there (a value the
    test could not hand it, after its answers or a read of a plain value it exported): no run of a
    candidate alone shows the test at fault (broken.py)."""
    undecided: bool = False
    """Neither the test's fault nor the candidate's can be shown (broken.py): the candidate is left
    unscored, never passed and never given a 0 for it."""

    def as_dict(self) -> dict[str, Any]:
        out = {"name": self.name, "kind": self.kind, "outcome": self.outcome, "message": self.message,
               "duration_ms": round(self.duration_ms, 1), "weight": self.weight, "integrity": self.integrity}
        if self.our_fault:
            out["our_fault"] = True
        if self.undecided:
            out["undecided"] = True
        if self.tampering:
            out["tampering"] = list(self.tampering)
        if self.reruns:
            out["reruns"] = [dict(r) for r in self.reruns]
        if self.node_id is not None:
            out["node_id"] = self.node_id
        if self.neutral:
            out["neutral"] = True
        return out


def flatten(outcome: TestOutcome) -> list[TestOutcome]:
    """The scored outcomes of one run: its cases for a suite, else itself."""
    return list(outcome.cases) if outcome.cases else [outcome]


def test_name(test: Test, index: int) -> str:
    return test.name or f"{test.kind}[{index}]"


_FENCE = re.compile(r"^```[ \t]*(?:python|py|python3)[ \t]*\n(.*?)^```", re.MULTILINE | re.DOTALL)


def _declared_in_blocks(prompt: str) -> str | None:
    """The module-level variables a prose prompt's ```python blocks assign a literal value
    (``CONN = None``), as source: the globals the task declares for the test to set."""
    parts = []
    for block in _FENCE.findall(prompt):
        try:
            tree = ast.parse(block)
        except (SyntaxError, ValueError):
            continue
        for node in tree.body:
            target = node.targets[0] if isinstance(node, ast.Assign) and len(node.targets) == 1 else \
                node.target if isinstance(node, ast.AnnAssign) and node.value is not None else None
            if not isinstance(target, ast.Name) or node.value is None:
                continue
            try:
                ast.literal_eval(node.value)
            except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
                continue
            parts.append(f"{target.id} = {ast.unparse(node.value)}")
    return "\n".join(parts) + "\n" if parts else None


def prompt_definitions(prompt: str | None) -> str | None:
    """The definitions a Python task prompt makes (imports, functions, classes, assignments), as
    source, so the test side can define helpers such as HumanEval's ``poly`` from the prompt itself.
    A prose prompt gives only the literal module-level assignments of its ```python blocks (the
    globals it declares, e.g. ``CONN = None``); None when there is nothing."""
    if not prompt:
        return None
    try:
        tree = ast.parse(prompt)
    except (SyntaxError, ValueError):
        return _declared_in_blocks(prompt)
    lines = prompt.splitlines()
    parts = []
    for node in tree.body:
        if isinstance(node, _PROMPT_NODES):
            first = min([node.lineno] + [d.lineno for d in getattr(node, "decorator_list", [])])
            parts.append("\n".join(lines[first - 1:node.end_lineno]))
    return "\n".join(parts) + "\n" if parts else None


@functools.lru_cache(maxsize=1024)
def _handed_over(kind: str, code: str | None, call: str | None, prompt_code: str | None,
                 entry_point: str | None) -> list[str]:
    """The hand-over rule (runtime/handover.py) for one test, once per test instead of once per run."""
    return sorted(handover.handed_over({"kind": kind, "code": code, "call": call, "prompt_code": prompt_code,
                                        "entry_point": entry_point}))


def build_plan(test: CodeTest, code: str, *, language: str, entry_point: str | None, prompt_code: str | None,
               timeout_s: float, output_limit: int, node: str | None, in_process: bool,
               module: str = "solution", pytest: Any = None) -> RunPlan:
    """The run for one test (see runs.py for the three modes). ``pytest``: the test side's pytest
    (``oracle.sandbox.pinned_pytest.PytestSource``), for a ``pytest`` test."""
    candidate = {"code": code, "entry_point": entry_point}
    if isinstance(test, PytestTest):
        suite = pytest_suite.spec(test, entry_point=entry_point, prompt_code=prompt_code, module=module,
                                  pytest=pytest)
        return RunPlan(mode="in_process" if in_process else "isolated", language=language,
                       candidate_spec=candidate, test_spec=suite, timeout_s=timeout_s, output_limit=output_limit,
                       node=node)
    if isinstance(test, IoTest):
        return RunPlan(mode="script", language=language, candidate_spec=candidate, stdin=test.stdin.encode(),
                       timeout_s=timeout_s, output_limit=output_limit, node=node)
    spec: dict[str, Any] = {"kind": test.kind, "entry_point": entry_point,
                            "prompt_code": prompt_code if language == "python" else None}
    if isinstance(test, (AssertTest, CheckTest)):
        # in_process merges this spec with the candidate's, whose "code" is the candidate's source.
        spec["test_code" if in_process else "code"] = test.code
    else:
        spec["call"] = test.call
    if not in_process:
        spec["handed_over"] = _handed_over(test.kind, spec.get("code"), spec.get("call"), spec["prompt_code"],
                                           entry_point)
    return RunPlan(mode="in_process" if in_process else "isolated", language=language, candidate_spec=candidate,
                   test_spec=spec, timeout_s=timeout_s, output_limit=output_limit, node=node)


def compare_stdout(got: str, expected: str, rule: str) -> bool:
    """The whitespace rules of an io test (see oracle.tasks.testspec.IoTest.whitespace)."""
    if rule == "exact":
        return got == expected
    if rule == "collapse":
        return " ".join(got.split()) == " ".join(expected.split())
    norm = lambda s: "\n".join(line.rstrip() for line in s.replace("\r\n", "\n").split("\n")).rstrip("\n")  # noqa: E731
    return norm(got) == norm(expected)


def _short(text: str, limit: int = 200) -> str:
    text = text.strip()
    return text if len(text) <= limit else text[:limit] + "..."


def _last_line(data: bytes) -> str:
    lines = data.decode(errors="replace").strip().splitlines()
    return lines[-1] if lines else ""


def interpret(test: Test, index: int, run: RunResult, *, tolerance: float, memory_mb: int,
              integrity: str = "isolated") -> TestOutcome:
    """Read the verdict of one run (see module docstring for the outcome rules)."""
    if isinstance(test, PytestTest) and not (run.our_fault or run.tampering):
        outcome = _suite_outcome(test, index, run, memory_mb=memory_mb, integrity=integrity)
    else:
        outcome = _interpret(test, index, run, tolerance=tolerance, memory_mb=memory_mb, integrity=integrity)
    return dataclasses.replace(outcome, reruns=tuple(run.reruns)) if run.reruns else outcome


def _suite_outcome(test: PytestTest, index: int, run: RunResult, *, memory_mb: int, integrity: str) -> TestOutcome:
    """A suite's outcome: one case per collected test, the suite's weight split equally over them; a
    run that gave no case at all is one outcome carrying the whole weight."""
    name = test_name(test, index)
    report = pytest_suite.read(run, memory_mb=memory_mb, timeout_s=test.timeout_s)
    if not report.cases:
        return TestOutcome(name, test.kind, report.outcome or "error", report.message or "no outcome",
                           run.duration_ms, test.weight, integrity, before_test=report.before_test)
    share = test.weight / len(report.cases)
    cases = tuple(TestOutcome(f"{name}::{pytest_suite.short_id(test, c.node_id)}", test.kind, c.outcome, c.message,
                              c.duration_ms, share, integrity, node_id=c.node_id, after_answers=c.after_answers)
                  for c in report.cases)
    worst = next((c.outcome for c in cases if c.outcome != "pass"), "pass")
    return TestOutcome(name, test.kind, worst, report.summary(), run.duration_ms, test.weight, integrity,
                       cases=cases)


def _interpret(test: Test, index: int, run: RunResult, *, tolerance: float, memory_mb: int,
               integrity: str) -> TestOutcome:
    name, kind, weight = test_name(test, index), test.kind, test.weight

    def out(outcome: str, message: str) -> TestOutcome:
        return TestOutcome(name, kind, outcome, _short(message) if message else outcome, run.duration_ms, weight,
                           integrity)

    if run.our_fault:
        return dataclasses.replace(out("error", run.our_fault), our_fault=True)
    if run.tampering:
        return dataclasses.replace(out("error", "tampering: this run changed its sandbox worker: "
                                       + "; ".join(run.tampering)), tampering=tuple(run.tampering))
    if run.timed_out:
        return out("timeout", f"no result within the {test.timeout_s} s limit" if test.timeout_s
                   else "no result within the time limit")
    if run.output_truncated:
        return out("error", "output limit exceeded (the run was stopped)")
    memory = f"memory limit ({memory_mb} MiB) exceeded" if run.memory_limit_hit else ""
    if isinstance(test, IoTest):
        ex = run.candidate_exit or {}
        if ex.get("lost"):
            return out("error", "the candidate's sandbox ended unexpectedly" + (f": {memory}" if memory else ""))
        if ex.get("exit_code") == 0:
            got = run.stdout.decode(errors="replace")
            if compare_stdout(got, test.stdout, test.whitespace):
                return out("pass", f"stdout matches ({test.whitespace})")
            return out("fail", f"stdout differs ({test.whitespace}): expected {test.stdout[:80]!r}, got {got[:80]!r}")
        if memory or ex.get("signal") == 9:
            return out("error", f"killed: {memory}" if memory else "killed by SIGKILL (a sandbox limit)")
        what = f"signal {ex.get('signal')}" if ex.get("signal") else f"exit code {ex.get('exit_code')}"
        last = _last_line(run.stderr)
        return out("error", f"the program ended ({what})" + (f": {last}" if last else ""))
    verdict = run.verdict
    if verdict is None:
        if run.report_error:
            return out("error", run.report_error)
        why = "; ".join(run.broken) if run.broken else "the test process ended without a verdict"
        tail = _last_line(run.test_output)
        return out("error", why + (f" ({memory})" if memory else "") + (f": {tail}" if tail else ""))
    vkind = verdict.get("outcome")
    message = str(verdict.get("message", ""))
    if vkind == "broken":  # the test process's own finding (runtime/blame.py); no candidate can send it
        broken = out("broken", message or "the test is broken")
        return dataclasses.replace(broken, after_answers=True) if verdict.get("after_answers") is True else broken
    if vkind in ("pass", "fail", "error"):
        if vkind == "error" and memory:
            message = f"{memory}: {message}"
        outcome = out(vkind, message or vkind)
        return dataclasses.replace(outcome, before_test=True) if verdict.get("stage") == "load" else outcome
    if vkind == "value" and isinstance(test, CallTest):
        try:
            value: Any = wire.decode(verdict.get("value"))
        except (wire.ChannelError, ValueError, RecursionError) as exc:
            return out("error", f"the call's value is unreadable: {exc}")
        tol = test.tolerance if test.tolerance is not None else tolerance
        problem = value_mismatch(value, test.expected, tol)
        if problem is None:
            return out("pass", f"{test.call} == {show(test.expected)}")
        return out("fail", f"{test.call}: {problem}")
    return out("error", f"the test process reported {vkind!r} for a {kind} test")
