"""Our pytest plugin for a pytest run: what is collected, and each test's outcome, streamed to the host.

It drops any collected item whose object is a candidate proxy (and names it), sends the collected
node ids before the first test runs, then one ``case`` frame per test as it ends (and one per
collection error), classifying each: pass, fail, error, skipped, xfailed, xpassed, or broken (a
collection error, or a fixture/setup error, while the candidate had not been involved since the
test started, or a value the test tried to hand the candidate that may not cross: the test's own
fault). A failure's message is pytest's own report (its ``E`` lines:
the compared values, the diff) and the line of the task's file.
"""

from __future__ import annotations

import os
import sys

from . import rpc, wire
from .blame import broken_by_test
from .pytest_names import Involvement, TaskModules

MAX_MESSAGE = 2000


def frame(op: str, **fields) -> dict:
    return {"op": op, **fields}


def short(text: str, limit: int = MAX_MESSAGE) -> str:
    text = text.strip()
    return text if len(text) <= limit else text[:limit] + "..."


def _failure_text(report, root: str, where: str | None = None) -> str:
    """pytest's own account of a failure: its ``E`` lines (the assertion introspection: the compared
    values, the diff), then where in the task's files (``where``, else pytest's crash line)."""
    text = (getattr(report, "longreprtext", "") or "").replace(root, "")
    lines = [ln[1:].strip() if ln.startswith("E ") else "" for ln in text.splitlines()]
    body = "\n".join(ln for ln in lines if ln)
    crash = getattr(getattr(report, "longrepr", None), "reprcrash", None)
    if where is None and crash is not None:
        where = f"{os.path.basename(str(crash.path))}:{crash.lineno}"
    if not body:
        body = crash.message if crash is not None else text.strip().splitlines()[-1] if text.strip() else ""
    return short(body + (f" ({where})" if where else ""))


def _taskframe(exc: BaseException | None, root: str) -> str | None:
    """``file:line`` of the innermost frame of ``exc``'s traceback that is in the task's files."""
    found, tb = None, getattr(exc, "__traceback__", None)
    while tb is not None:
        name = tb.tb_frame.f_code.co_filename
        if name.startswith(root):
            found = f"{name[len(root):]}:{tb.tb_lineno}"
        tb = tb.tb_next
    return found


def _skip_reason(report) -> str:
    longrepr = report.longrepr
    if isinstance(longrepr, tuple) and len(longrepr) == 3:
        return short(str(longrepr[2]))
    return short(str(longrepr))


class Plugin:
    """Our pytest plugin: filters what is collected, classifies and streams each outcome."""

    def __init__(self, report: wire.Channel, involvement: Involvement, finder: TaskModules,
                 is_candidate, started: int) -> None:
        self.report, self.involvement, self.finder = report, involvement, finder
        self.is_candidate = is_candidate
        self.dropped: list[str] = []
        self.collected: list[str] = []
        self.cases: dict[str, dict] = {}
        self.run_start = started
        self.setup_errors: list[tuple[BaseException | None, str]] = []
        """Each setup error so far and how it was judged (a wider-scoped fixture re-raises its own)."""
        self._item: dict = {}
        self.unsendable_seen = 0
        """How many of the peer's unsendable values collection reports have accounted for."""
        self.needs_seen = 0
        """How many of the peer's in-process reads collection reports have accounted for."""
        self._after_answers = False
        """Whether the case being classified broke after the candidate could have steered it there."""

    # -- collection ------------------------------------------------------------------------
    def pytest_load_initial_conftests(self, early_config, parser, args) -> None:
        """The task's modules (conftest.py included) load through our finder, ahead of pytest's
        assertion rewriter, which is in place by now."""
        if self.finder in sys.meta_path:
            sys.meta_path.remove(self.finder)
        sys.meta_path.insert(0, self.finder)

    pytest_load_initial_conftests.tryfirst = True  # type: ignore[attr-defined]

    def pytest_pycollect_makeitem(self, collector, name, obj):
        if self.is_candidate(obj):  # never a test of the task: dropped, and reported when pytest would collect it
            if collector.funcnamefilter(name) or collector.classnamefilter(name):
                self.dropped.append(f"{collector.nodeid}::{name}")
            return []
        return None

    pytest_pycollect_makeitem.tryfirst = True  # type: ignore[attr-defined]

    def pytest_collectreport(self, report) -> None:
        if not report.failed:
            return
        # Collection comes before any test: involvement since the run started decides.
        untouched = self.involvement.blame_test and self.involvement.now() == self.run_start
        outcome = "broken" if untouched else "error"
        message = _failure_text(report, self.finder.root)
        peer = self.involvement.peer
        if peer is not None and len(peer.unsendable) > self.unsendable_seen:
            after = self._steered(peer.unsendable_at[self.unsendable_seen])
            why, self.unsendable_seen = peer.unsendable[self.unsendable_seen], len(peer.unsendable)
            self._send_case(report.nodeid or "<collection>", "broken", short(broken_by_test(why)), 0.0, after)
            return
        if peer is not None and len(peer.needs_in_process) > self.needs_seen:
            # importing the test module read the candidate's internals: the test's design, as in a
            # test, when that read is what failed (a caught one leaves its record, not this report)
            why, answers = peer.needs_in_process[self.needs_seen]
            self.needs_seen = len(peer.needs_in_process)
            if self.involvement.blame_test and rpc.NeedsInProcess.__name__ in (report.longreprtext or ""):
                self._send_case(report.nodeid or "<collection>", "broken", short(broken_by_test(why)), 0.0,
                                self._steered(answers))
                return
        missing = sorted(set(self.involvement.missing))
        if missing:
            message = f"the candidate's module defines no {', '.join(map(repr, missing))}: {message}"
        if outcome == "broken":
            message = f"collecting {report.nodeid or 'the tests'} failed before the candidate was involved " \
                      f"(the test's own fault): {message}"
        self._send_case(report.nodeid or "<collection>", outcome, message, 0.0)

    def pytest_collection_finish(self, session) -> None:
        self.collected = [item.nodeid for item in session.items]
        self.report.send(frame("collected", node_ids=self.collected, dropped=self.dropped))

    # -- running ---------------------------------------------------------------------------
    def pytest_runtest_logstart(self, nodeid, location) -> None:
        peer = self.involvement.peer
        self._item = {"start": self.involvement.now(), "reports": [], "excs": {},
                      "violations": len(peer.violations) if peer else 0,
                      "test_failures": len(peer.test_failures) if peer else 0,
                      "unsendable": len(peer.unsendable) if peer else 0,
                      "missing": len(self.involvement.missing)}

    def pytest_runtest_makereport(self, item, call):
        if call.excinfo is not None:
            self._item.setdefault("excs", {})[call.when] = call.excinfo.value
            self._item.setdefault("where", {})[call.when] = _taskframe(call.excinfo.value, self.finder.root)
            if call.when == "setup":
                self._item["setup_involved"] = self.involvement.now() != self._item.get("start")

    def pytest_runtest_logreport(self, report) -> None:
        self._item.setdefault("reports", []).append(report)

    def pytest_runtest_logfinish(self, nodeid, location) -> None:
        state, self._item = self._item, {}
        self._after_answers = False
        outcome, message = self._classify(state)
        duration = sum(float(getattr(r, "duration", 0.0) or 0.0) for r in state.get("reports", []))
        self._send_case(nodeid, outcome, message, duration * 1000, self._after_answers)

    def _classify(self, state: dict) -> tuple[str, str]:
        reports = {r.when: r for r in state.get("reports", [])}
        excs = state.get("excs", {})
        peer = self.involvement.peer
        setup, call, teardown = reports.get("setup"), reports.get("call"), reports.get("teardown")
        missing = self.involvement.missing[state.get("missing", 0):]
        where = state.get("where", {})

        def text(report, when: str) -> str:
            return _failure_text(report, self.finder.root, where.get(when))

        crossed = next((e for e in excs.values() if isinstance(e, rpc.Unsendable)), None)  # a fixture's cached one too
        if peer is not None and len(peer.unsendable) > state.get("unsendable", 0):
            first = state.get("unsendable", 0)
            self._after_answers = self._steered(peer.unsendable_at[first])
            return "broken", short(broken_by_test(peer.unsendable[first]))
        if crossed is not None:
            self._after_answers = self._steered(crossed.requests_made)
            return "broken", short(broken_by_test(rpc._message(crossed)))
        needs = next((e for e in excs.values() if isinstance(e, rpc.NeedsInProcess)), None)
        if needs is not None and self.involvement.blame_test:  # the test's design needs the candidate's process
            self._after_answers = self._steered(peer.requests_made if peer is not None else 0)
            return "broken", short(broken_by_test(rpc._message(needs)))
        if setup is not None and setup.failed:
            exc = excs.get("setup")
            if isinstance(exc, rpc.BoundaryError):
                return "error", short(f"{type(exc).__name__}: {rpc._message(exc)}")
            earlier = next((o for e, o in self.setup_errors if e is exc), None)
            if earlier is not None:  # a fixture's cached error (a wider scope): as it was judged the first time
                return earlier, short(("a fixture or setup failed before the candidate was involved (the "
                                        "test's own fault): " if earlier == "broken" else "") + text(setup, "setup"))
            blame = self.involvement.blame_test and not state.get("setup_involved") and not missing
            self.setup_errors.append((exc, "broken" if blame else "error"))
            if blame:
                return "broken", short("a fixture or setup failed before the candidate was involved (the "
                                        "test's own fault): " + text(setup, "setup"))
            return "error", text(setup, "setup")
        if setup is not None and setup.skipped:
            if hasattr(setup, "wasxfail"):
                return "xfailed", short(f"xfail: {setup.wasxfail}" if setup.wasxfail else "xfail")
            return "skipped", _skip_reason(setup)
        if call is None:
            return "error", "the test did not run"
        if peer is not None and len(peer.violations) > state.get("violations", 0):
            return "error", short(f"{peer.violations[state.get('violations', 0)]} while running the test")
        exc = excs.get("call")
        if call.failed and isinstance(exc, rpc.BoundaryError):
            return "error", short(f"{rpc._message(exc)} while running the test")
        if call.skipped:
            if hasattr(call, "wasxfail"):
                return "xfailed", short(f"xfail: {call.wasxfail}" if call.wasxfail else "xfail")
            return "skipped", _skip_reason(call)
        if call.failed:
            return "fail", text(call, "call")
        if peer is not None and len(peer.test_failures) > state.get("test_failures", 0):
            return "fail", short(peer.test_failures[state.get("test_failures", 0)])
        if teardown is not None and teardown.failed:
            return "error", short("teardown: " + text(teardown, "teardown"))
        if hasattr(call, "wasxfail"):
            return "xpassed", short(f"xpass: {call.wasxfail}" if call.wasxfail else "xpass")
        return "pass", "passed"

    def _steered(self, answers: int) -> bool:
        """Whether the candidate could have led a test where it broke: any answer in this run by
        then (``answers`` requests; an earlier test's, or a cached fixture's value, counts too), or a
        read of a plain value it exported (a constant such as ``MODE = 1``) (broken.py)."""
        return answers > 0 or self.involvement.plain_reads > 0

    def _send_case(self, node_id: str, outcome: str, message: str, duration_ms: float,
                   after_answers: bool = False) -> None:
        case = {"node_id": node_id, "outcome": outcome, "message": message, "duration_ms": round(duration_ms, 3)}
        if after_answers:
            case["after_answers"] = True
        self.cases[node_id] = case
        self.report.send(frame("case", **case))
