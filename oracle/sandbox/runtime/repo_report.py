"""The report channel and pytest plugin of a repository test run (runs inside the sandbox).

Why not stdout or a file: a candidate's code shares this process (the repository's tests import it)
and can print "PASSED" lines or write any file in its tree. The channel is a pipe the host opened
and the bootstrap took before any candidate code ran; every frame carries an HMAC over its sequence
number and body, keyed by a per-run secret the host sent on stdin (read and gone before collection).
A candidate that writes to the pipe by guessing its fd number cannot produce a valid frame, and a
broken frame makes the whole report untrusted on the host (a problem, never a pass).

What the plugin reports: the node ids collected (after every ``pytest_collection_modifyitems``),
the deselected ones, collection errors, one ``case`` per test with its outcome, and pytest's exit
status at ``pytest_sessionfinish``. Each outcome is checked against what really happened: the
``CallInfo`` of each phase is recorded as pytest's runner makes it, beneath every hook, so a hook
that rewrites a failed report to passed, or fabricates reports for a test that never ran its call
phase, turns that test into an ``error`` naming the rewrite.

Kept to Python 3.8 syntax: it runs on the task's interpreter, not the oracle's.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os

MAX_MESSAGE = 2000


class Channel:
    """Authenticated frames on the report pipe: ``<hmac hex> <json>\\n``, sequence-numbered."""

    def __init__(self, fd: int, key: bytes) -> None:
        self._fd, self._key, self._seq = fd, key, 0

    def send(self, op: str, **fields) -> None:
        body = json.dumps(dict(fields, op=op), separators=(",", ":"), ensure_ascii=True).encode()
        tag = hmac.new(self._key, str(self._seq).encode() + b"\0" + body, hashlib.sha256).hexdigest()
        self._seq += 1
        data = tag.encode() + b" " + body + b"\n"
        while data:
            data = data[os.write(self._fd, data):]


def short(text: str, limit: int = MAX_MESSAGE) -> str:
    text = (text or "").strip()
    return text if len(text) <= limit else text[:limit] + "..."


def failure_text(report, root: str = "") -> str:
    """pytest's own account: its ``E`` lines (the assertion introspection), then the crash line
    (paths relative to the repository root, the same on every backend)."""
    text = getattr(report, "longreprtext", "") or ""
    if root:
        text = text.replace(root.rstrip("/") + "/", "")
    body = "\n".join(ln[1:].strip() for ln in text.splitlines() if ln.startswith("E "))
    crash = getattr(getattr(report, "longrepr", None), "reprcrash", None)
    path = str(crash.path) if crash is not None else ""
    if root and path.startswith(root.rstrip("/") + "/"):
        path = path[len(root.rstrip("/")) + 1:]
    where = f"{path}:{crash.lineno}" if crash is not None else ""
    if not body:
        body = crash.message if crash is not None else (text.strip().splitlines() or [""])[-1]
    return short(body + (f" ({where})" if where else ""))


def _skip_reason(report) -> str:
    longrepr = report.longrepr
    if isinstance(longrepr, tuple) and len(longrepr) == 3:
        return short(str(longrepr[2]))
    return short(str(longrepr))


class ReportPlugin:
    """Streams what pytest collected and each test's checked outcome to the host."""

    def __init__(self, channel: Channel, select=None) -> None:
        self.channel = channel
        self.select = list(select or [])
        """The required node ids: pytest is given their files, and this plugin keeps their items only
        (a node id pytest cannot collect would end the whole session as a usage error)."""
        self._current = None
        self._raw: dict = {}
        self._reports: list = []
        self._skip_types: tuple = ()
        self.root = ""

    # -- the runner's own record, beneath every hook -----------------------------------------
    def _patch_callinfo(self) -> None:
        from _pytest import outcomes, runner

        self._skip_types = (outcomes.Skipped, getattr(outcomes, "XFailed", outcomes.Skipped))
        original = runner.CallInfo.from_call.__func__  # type: ignore[attr-defined]  # a classmethod
        plugin = self

        def from_call(cls, func, when, reraise=None):
            info = original(cls, func, when, reraise)
            if when in ("setup", "call", "teardown") and plugin._current is not None:
                exc = info.excinfo.value if info.excinfo is not None else None
                plugin._raw[when] = exc
            return info

        runner.CallInfo.from_call = classmethod(from_call)  # type: ignore[method-assign,assignment]

    def pytest_configure(self, config) -> None:
        import pytest

        self._patch_callinfo()
        self.root = str(config.rootpath)
        self.channel.send("configured", pytest_version=pytest.__version__, rootdir=str(config.rootpath))

    pytest_configure.tryfirst = True  # type: ignore[attr-defined]

    # -- collection ----------------------------------------------------------------------------
    def pytest_collectreport(self, report) -> None:
        if report.failed:
            self.channel.send("collect_error", node_id=report.nodeid or "", message=failure_text(report, self.root))

    def pytest_collection_modifyitems(self, session, config, items) -> None:
        """Last of every ``modifyitems``: keep the required tests' items (exact, or a parametrized or
        class node id's items); what other hooks removed stays removed, and is reported missing."""
        if not self.select:
            return
        wanted = set(self.select)
        prefixes = tuple(n + s for n in self.select for s in ("[", "::"))
        items[:] = [i for i in items if i.nodeid in wanted or i.nodeid.startswith(prefixes)]

    pytest_collection_modifyitems.trylast = True  # type: ignore[attr-defined]

    def pytest_deselected(self, items) -> None:
        self.channel.send("deselected", node_ids=[item.nodeid for item in items])

    def pytest_collection_finish(self, session) -> None:
        self.channel.send("collected", node_ids=[item.nodeid for item in session.items])

    pytest_collection_finish.trylast = True  # type: ignore[attr-defined]

    # -- running -------------------------------------------------------------------------------
    def pytest_runtest_logstart(self, nodeid, location) -> None:
        self._current, self._raw, self._reports = nodeid, {}, []

    pytest_runtest_logstart.tryfirst = True  # type: ignore[attr-defined]

    def pytest_runtest_logreport(self, report) -> None:
        self._reports.append(report)

    pytest_runtest_logreport.trylast = True  # type: ignore[attr-defined]

    def pytest_runtest_logfinish(self, nodeid, location) -> None:
        outcome, message = self._classify()
        duration = sum(float(getattr(r, "duration", 0.0) or 0.0) for r in self._reports)
        self.channel.send("case", node_id=nodeid, outcome=outcome, message=message,
                          duration_ms=round(duration * 1000, 3))
        self._current, self._raw, self._reports = None, {}, []

    pytest_runtest_logfinish.trylast = True  # type: ignore[attr-defined]

    def _raised(self, when: str):
        """The exception phase ``when`` really raised, unless it is a skip or xfail."""
        exc = self._raw.get(when)
        return None if exc is None or isinstance(exc, self._skip_types) else exc

    def _classify(self):
        reports = {r.when: r for r in self._reports}
        setup, call, teardown = reports.get("setup"), reports.get("call"), reports.get("teardown")
        for when in ("setup", "call"):
            exc, rep = self._raised(when), reports.get(when)
            if exc is not None and (rep is None or rep.passed):
                return "error", short(f"outcome rewritten: the {when} phase raised {type(exc).__name__}: {exc} "
                                      "but a hook reported it passed")
        if setup is not None and setup.failed:
            return "error", "setup: " + failure_text(setup, self.root)
        if setup is not None and setup.skipped:
            if hasattr(setup, "wasxfail"):
                return "xfailed", short(f"xfail: {setup.wasxfail}")
            return "skipped", _skip_reason(setup)
        if call is None:
            return "error", "the test did not run (no call phase was reported)"
        if "call" not in self._raw:
            return "error", "a call phase was reported that pytest's runner never ran (fabricated by a hook)"
        if call.skipped:
            if hasattr(call, "wasxfail"):
                return "xfailed", short(f"xfail: {call.wasxfail}")
            return "skipped", _skip_reason(call)
        if call.failed:
            return "failed", failure_text(call, self.root)
        if teardown is not None and teardown.failed:
            return "error", "teardown: " + failure_text(teardown, self.root)
        if self._raised("teardown") is not None:
            exc = self._raised("teardown")
            return "error", short(f"outcome rewritten: teardown raised {type(exc).__name__}: {exc}")
        if hasattr(call, "wasxfail"):
            return "xpassed", short(f"xpass: {call.wasxfail}")
        return "passed", ""

    # -- the end -------------------------------------------------------------------------------
    def pytest_sessionfinish(self, session, exitstatus) -> None:
        self.channel.send("finish", exitstatus=int(exitstatus), testsfailed=int(session.testsfailed),
                          testscollected=int(session.testscollected))

    pytest_sessionfinish.trylast = True  # type: ignore[attr-defined]
