"""A ``pytest`` test's run: the spec the test process gets, and what its report frames add up to.

The test process (oracle/sandbox/runtime/pytest_side.py) streams ``collected`` (the node ids, before
any test runs), one ``case`` per test as it ends, and the ``verdict``. The host trusts no count it
did not see: every collected test gets an outcome here, and one the test process never reported is
``timeout`` when the run hit its limit, else ``error`` (the process ended first). Nothing here reads
the candidate's output.
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from oracle.sandbox.runs import RunResult
from oracle.tasks.testspec import PYTEST_CODE_FILE, PytestTest

OUTCOMES = frozenset({"pass", "fail", "error", "timeout", "broken", "skipped", "xfailed", "xpassed"})
_WORDS = {"pass": "passed", "fail": "failed", "error": "error", "timeout": "timed out", "broken": "broken",
          "skipped": "skipped", "xfailed": "xfailed", "xpassed": "xpassed"}
MAX_MESSAGE = 2000


def spec(test: PytestTest, *, entry_point: str | None, prompt_code: str | None, module: str, pytest: Any) -> dict:
    """The test process's spec: the task's files, the selection, the candidate's module name and
    where the test side's pytest is (``pytest``: a ``PytestSource``)."""
    return {"kind": "pytest", "files": test.test_files(), "select": test.select, "entry_point": entry_point,
            "prompt_code": prompt_code, "module": module,
            "test_sys_path": [pytest.path] if pytest is not None and pytest.path else [],
            "plugin_autoload": bool(pytest is not None and pytest.plugin_autoload)}


@dataclass(frozen=True)
class Case:
    node_id: str
    outcome: str
    message: str
    duration_ms: float
    after_answers: bool = False
    """A ``broken`` case whose test had been answered by the candidate before (broken.py)."""


@dataclass
class SuiteReport:
    """What one run of a suite gave: its cases, or (no case at all) one outcome for the whole run."""

    cases: list[Case] = field(default_factory=list)
    outcome: str | None = None
    message: str = ""
    pytest_version: str | None = None
    dropped: list[str] = field(default_factory=list)
    before_test: bool = False
    """The run ended before any test code ran (the candidate did not load): it says nothing of the suite."""

    def summary(self) -> str:
        counts = Counter(c.outcome for c in self.cases)
        text = ", ".join(f"{n} {_WORDS.get(k, k)}{'s' if k == 'error' and n > 1 else ''}"
                         for k, n in sorted(counts.items(), key=lambda kv: -kv[1]))
        if self.dropped:
            text += "; candidate names pytest would have collected, not run as tests: " + ", ".join(self.dropped)
        return text or self.message


def short_id(test: PytestTest, node_id: str) -> str:
    """A case's name within its suite: the node id, without the file name for a ``code`` module."""
    prefix = PYTEST_CODE_FILE + "::"
    return node_id[len(prefix):] if test.code is not None and node_id.startswith(prefix) else node_id


def read(run: RunResult, *, memory_mb: int, timeout_s: float | None = None) -> SuiteReport:
    """The suite's outcomes from the run's frames (see module docstring)."""
    report = SuiteReport()
    collected: list[str] | None = None
    seen: dict[str, Case] = {}
    for frame in run.events:
        op = frame.get("op")
        if op == "collected" and collected is None and isinstance(frame.get("node_ids"), list):
            collected = [str(n) for n in frame["node_ids"]]
            report.dropped = [str(n) for n in frame.get("dropped") or []]
        elif op == "case" and isinstance(frame.get("node_id"), str):
            node_id = frame["node_id"]
            outcome = frame.get("outcome") if frame.get("outcome") in OUTCOMES else "error"
            if node_id not in seen:
                seen[node_id] = Case(node_id, str(outcome), str(frame.get("message") or outcome)[:MAX_MESSAGE],
                                     float(frame.get("duration_ms") or 0.0),
                                     after_answers=outcome == "broken" and frame.get("after_answers") is True)
    verdict = run.verdict
    if verdict is not None:
        report.pytest_version = verdict.get("pytest_version")
    if verdict is not None and verdict.get("outcome") != "suite":
        # The run stopped before pytest ran (the candidate did not load, pytest is missing here...).
        report.outcome = verdict.get("outcome") if verdict.get("outcome") in ("error", "broken") else "error"
        report.message = str(verdict.get("message") or report.outcome)[:MAX_MESSAGE]
        report.before_test = verdict.get("stage") == "load"
        return report
    memory = f"memory limit ({memory_mb} MiB) exceeded" if run.memory_limit_hit else ""
    limit = f"the suite's {timeout_s:g} s limit" if timeout_s else "the time limit"
    if run.timed_out:
        lost = ("timeout", f"not run or not finished within {limit}")
    else:
        why = run.report_error or ("; ".join(run.broken) if run.broken else "the test process ended before "
                                                                           "reporting this test")
        lost = ("error", why + (f" ({memory})" if memory else ""))
    if not collected and not seen:
        if verdict is not None and verdict.get("suite_outcome") in ("broken", "error"):
            report.outcome, report.message = verdict["suite_outcome"], str(verdict.get("message") or "")
        else:
            report.outcome, report.message = lost[0], lost[1] if lost[0] == "error" else \
                f"no test was collected within {limit}"
        return report
    order = [n for n in seen if n not in (collected or [])] + list(collected or [])
    for node_id in order:
        report.cases.append(seen.get(node_id) or Case(node_id, lost[0], lost[1], 0.0))
    if verdict is not None and (verdict.get("reported") != len(seen) or list(verdict.get("collected") or [])
                                != list(collected or [])):
        report.cases = [c if c.outcome != "pass" else Case(c.node_id, "error", "the suite's report does not add "
                                                           "up (collected vs reported)", c.duration_ms)
                        for c in report.cases]
    return report


def align(runs: dict[Any, Any]) -> dict[Any, Any]:
    """One pytest test's runs (key -> its suite outcome), with a file that failed to collect in a run
    standing for the tests the other runs collected from it.

    Why: a collection error is one case named by its file (``test_x.py``), while a run that collected
    the file has one case per test (``test_x.py::test_a``...). Left as they are, every run would be
    scored on the union: the run that collected fine would get an ``error`` for the file it never
    failed on, and the failing one would miss the tests it could not collect. So the file's case is
    replaced, in its own run, by one case per test the others collected from it (same outcome and
    message), and the run's weight is shared again over its cases. A file no run collected stays one case."""
    collected: dict[str, Any] = {}
    for outcome in runs.values():
        for case in getattr(outcome, "cases", ()) or ():
            if case.node_id and "::" in case.node_id:
                collected.setdefault(case.node_id, case)
    out = {}
    for key, outcome in runs.items():
        cases = getattr(outcome, "cases", ()) or ()
        if not any(c.node_id and "::" not in c.node_id for c in cases):
            out[key] = outcome
            continue
        own = {c.node_id for c in cases}
        new = []
        for case in cases:
            stands_for = [n for n in collected if n.startswith(f"{case.node_id}::") and n not in own] \
                if case.node_id and "::" not in case.node_id else []
            if not stands_for:
                new.append(case)
                continue
            for node_id in stands_for:
                new.append(dataclasses.replace(case, node_id=node_id, name=collected[node_id].name))
        share = outcome.weight / len(new)
        out[key] = dataclasses.replace(outcome, cases=tuple(dataclasses.replace(c, weight=share) for c in new))
    return out


def align_runs(tests: list, every: dict[str, dict[int, Any]], reference: dict[int, Any] | None) -> None:
    """``align`` for every pytest test of a task, in place: the candidates' runs (candidate id ->
    test index -> outcome) and the reference solution's, before the broken-test rules compare them."""
    for i, test in enumerate(tests):
        if not isinstance(test, PytestTest):
            continue
        group = {("candidate", cid): per[i] for cid, per in every.items() if i in per}
        if reference is not None and i in reference:
            group[("reference", "")] = reference[i]
        for (who, cid), outcome in align(group).items():
            if who == "reference":
                reference[i] = outcome  # type: ignore[index]
            else:
                every[cid][i] = outcome
