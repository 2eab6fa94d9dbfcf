"""One test run across a worker pair: wire up the descriptors, watch everything, collect what happened.

Isolated runs (``call``, ``assert``, ``check``): the host makes a connected socket pair and hands one
end to a fresh candidate process and the other to a fresh test process; the test process's verdict
comes to the host on a pipe only the test process holds. ``io`` runs: only the candidate process
runs, as a program; the host writes its stdin and compares its stdout itself. ``in_process`` runs
(opt-in, forgeable, labelled): the test runs inside the candidate's process and reports on a pipe.

Nothing the candidate prints is parsed. A run that does not finish in time is killed by its worker;
a worker that does not confirm the kill is destroyed (``broken``), and the pool replaces it.
"""

from __future__ import annotations

import os
import select
import socket
import time
from dataclasses import dataclass, field

from oracle.strategies.verifier.runtime import wire
from oracle.errors import SandboxError
from oracle.strategies.verifier.workers import Worker, WorkerBroken, WorkerPool

GRACE_S = 2.0
"""How long the candidate may take to end after the test side finished (it sees the channel close)."""
REPORT_LIMIT = wire.MAX_FRAME + 4


@dataclass
class RunPlan:
    mode: str
    """isolated | script | in_process"""
    language: str
    candidate_spec: dict
    test_spec: dict | None = None
    stdin: bytes = b""
    timeout_s: float = 10.0
    output_limit: int = 1_000_000
    node: str | None = None


@dataclass
class RunResult:
    verdict: dict | None = None
    """The test process's report (isolated, in_process), None when it gave none."""
    candidate_exit: dict | None = None
    test_exit: dict | None = None
    stdout: bytes = b""
    stderr: bytes = b""
    test_output: bytes = b""
    timed_out: bool = False
    output_truncated: bool = False
    memory_limit_hit: bool = False
    broken: list[str] = field(default_factory=list)
    """Why a worker had to be destroyed during this run (the pair is not reused)."""
    duration_ms: float = 0.0
    report_error: str | None = None


def _runtime(language: str, side: str) -> str:
    return f"{'python' if language == 'python' else 'node'}-{side}"


class _Streams:
    """Non-blocking reads of the run's pipes with per-stream caps."""

    def __init__(self, cap: int) -> None:
        self.cap = cap
        self.fds: dict[int, str] = {}
        self.data: dict[str, bytearray] = {}
        self.overflow: set[str] = set()

    def add(self, fd: int, name: str) -> None:
        os.set_blocking(fd, False)
        self.fds[fd] = name
        self.data[name] = bytearray()

    def read(self, fd: int) -> str:
        """Read what is there: "data", "empty" (nothing now) or "eof" (the fd is then closed)."""
        name = self.fds[fd]
        try:
            chunk = os.read(fd, 65536)
        except BlockingIOError:
            return "empty"
        except OSError:
            chunk = b""
        if not chunk:
            os.close(fd)
            del self.fds[fd]
            return "eof"
        cap = REPORT_LIMIT if name == "report" else self.cap
        room = cap - len(self.data[name])
        if room > 0:
            self.data[name] += chunk[:room]
        if len(chunk) > room:
            self.overflow.add(name)
        return "data"

    def close(self) -> None:
        for fd in list(self.fds):
            os.close(fd)
        self.fds.clear()


def execute(candidate: Worker, test: Worker, plan: RunPlan) -> RunResult:
    """Run one test (blocking). Raises WorkerBroken only when a worker failed before the run began."""
    started = time.monotonic()
    result = RunResult()
    streams = _Streams(plan.output_limit)
    to_close: list[int] = []
    stdin_w: int | None = None
    oom_before = candidate.oom_kills() + test.oom_kills()
    workers: dict[str, Worker] = {"candidate": candidate}
    try:
        out_r, out_w = os.pipe()
        err_r, err_w = os.pipe()
        streams.add(out_r, "stdout")
        streams.add(err_r, "stderr")
        to_close += [out_w, err_w]
        base = {"cpu_s": int(plan.timeout_s * 2) + 1, "node": plan.node}
        if plan.mode == "script":
            in_r, stdin_w = os.pipe()
            to_close.append(in_r)
            os.set_blocking(stdin_w, False)
            candidate.send({"op": "run", **base, "runtime": _runtime(plan.language, "candidate"),
                            "spec": {**plan.candidate_spec, "mode": "script"},
                            "fd_roles": ["stdin", "stdout", "stderr"]}, (in_r, out_w, err_w))
        elif plan.mode == "in_process":
            rep_r, rep_w = os.pipe()
            streams.add(rep_r, "report")
            to_close.append(rep_w)
            candidate.send({"op": "run", **base, "runtime": _runtime(plan.language, "test"),
                            "spec": {**plan.test_spec, **plan.candidate_spec, "in_process": True},  # type: ignore[dict-item]
                            "fd_roles": ["report", "stdout", "stderr"]}, (rep_w, out_w, err_w))
        else:
            chan_c, chan_t = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
            rep_r, rep_w = os.pipe()
            tout_r, tout_w = os.pipe()
            streams.add(rep_r, "report")
            streams.add(tout_r, "test_output")
            cand_end, test_end = chan_c.detach(), chan_t.detach()
            to_close += [cand_end, test_end, rep_w, tout_w]
            workers["test"] = test
            candidate.send({"op": "run", **base, "runtime": _runtime(plan.language, "candidate"),
                            "spec": {**plan.candidate_spec, "mode": "serve"},
                            "fd_roles": ["channel", "stdout", "stderr"]}, (cand_end, out_w, err_w))
            test.send({"op": "run", **base, "runtime": _runtime(plan.language, "test"),
                       "spec": plan.test_spec, "fd_roles": ["channel", "report", "stdout", "stderr"]},
                      (test_end, rep_w, tout_w, tout_w))
    except BaseException:
        streams.close()
        if stdin_w is not None:
            os.close(stdin_w)
        raise
    finally:
        for fd in to_close:  # the workers hold their own copies now
            os.close(fd)
    _watch(workers, streams, plan, result, stdin_w, started)
    result.stdout = bytes(streams.data.get("stdout", b""))
    result.stderr = bytes(streams.data.get("stderr", b""))
    result.test_output = bytes(streams.data.get("test_output", b""))
    result.output_truncated = bool(streams.overflow & {"stdout", "stderr"})
    report = bytes(streams.data.get("report", b""))
    if plan.mode != "script":
        result.verdict, result.report_error = _parse_report(report, "report" in streams.overflow)
    result.memory_limit_hit = candidate.oom_kills() + test.oom_kills() > oom_before
    result.duration_ms = (time.monotonic() - started) * 1000
    return result


def _parse_report(report: bytes, overflow: bool) -> tuple[dict | None, str | None]:
    if overflow:
        return None, "the test's report exceeded its size limit"
    if len(report) < 4:
        return None, None
    (size,) = wire._HEADER.unpack(report[:4])
    if len(report) != 4 + size:
        return None, "the test's report was cut short"
    try:
        verdict = wire.loads(report[4:])
    except wire.ChannelError as exc:
        return None, f"the test's report is unreadable: {exc}"
    return verdict, None


def _watch(workers: dict[str, Worker], streams: _Streams, plan: RunPlan, result: RunResult,
           stdin_w: int | None, started: float) -> None:
    deadline = started + plan.timeout_s
    exits: dict[str, dict] = {}
    killing: dict[str, float] = {}
    # None only without a stdin pipe (stdin_w is None), and then it is never read.
    pending_stdin: memoryview = memoryview(plan.stdin) if stdin_w is not None else None  # type: ignore[assignment]
    if stdin_w is not None and not plan.stdin:
        os.close(stdin_w)
        stdin_w = None
    test_done_at: float | None = None

    def kill(role: str, why_deadline: float) -> None:
        if role in exits or role in killing:
            return
        try:
            workers[role].send({"op": "kill"})
            killing[role] = why_deadline
        except WorkerBroken as exc:
            result.broken.append(str(exc))
            exits[role] = {"op": "exited", "exit_code": None, "signal": None, "lost": True}

    try:
        while len(exits) < len(workers) or streams.fds:
            now = time.monotonic()
            if len(exits) == len(workers) and streams.fds:
                # The run is over: take what the pipes still hold. A writer that outlived it (a lost
                # worker's run, until the pool destroys that worker) must not keep us here.
                for fd in list(streams.fds):
                    while streams.read(fd) == "data":
                        pass
                break
            if now >= deadline and not result.timed_out and len(exits) < len(workers):
                result.timed_out = True
                for role in workers:
                    kill(role, now + GRACE_S)
            if "test" in exits and "candidate" not in exits and test_done_at is None:
                test_done_at = now
            if test_done_at is not None and now - test_done_at > GRACE_S:
                kill("candidate", now + GRACE_S)
            if streams.overflow & {"stdout", "stderr"} and not killing:
                for role in workers:
                    kill(role, now + GRACE_S)
            for role, until in list(killing.items()):
                if role not in exits and now > until:
                    result.broken.append(f"the {role} worker did not end a killed run")
                    exits[role] = {"op": "exited", "exit_code": None, "signal": 9, "lost": True}
            socks = {w.sock.fileno(): role for role, w in workers.items() if role not in exits and w.sock}
            waits = [deadline - now if not result.timed_out else 0.05] + \
                    [u - now for u in killing.values()] + ([GRACE_S] if test_done_at else [])
            timeout = max(0.0, min(waits + [0.5]))
            poller = select.poll()
            for fd in list(socks) + list(streams.fds):
                poller.register(fd, select.POLLIN)
            if stdin_w is not None:
                poller.register(stdin_w, select.POLLOUT)
            for fd, event in poller.poll(timeout * 1000):
                if fd == stdin_w:
                    try:
                        n = os.write(stdin_w, pending_stdin[:65536])
                        pending_stdin = pending_stdin[n:]
                    except BlockingIOError:
                        continue
                    except OSError:
                        pending_stdin = pending_stdin[:0]
                    if not pending_stdin:
                        os.close(stdin_w)
                        stdin_w = None
                elif fd in socks:
                    role = socks[fd]
                    try:
                        workers[role].pump()
                        while (message := workers[role].take()) is not None:
                            if message.get("op") == "exited":
                                exits[role] = message
                    except WorkerBroken as exc:
                        result.broken.append(str(exc))
                        exits[role] = {"op": "exited", "exit_code": None, "signal": None, "lost": True}
                elif fd in streams.fds:
                    streams.read(fd)
    finally:
        if stdin_w is not None:
            os.close(stdin_w)
        streams.close()
    result.candidate_exit = exits.get("candidate")
    result.test_exit = exits.get("test")
    for role, message in exits.items():
        if message.get("clean") is False:
            result.broken.append(f"the {role} worker could not empty its work directory")


def run_in_pool(pool: WorkerPool, plan: RunPlan) -> RunResult:
    """Run on a pair from ``pool`` (blocking). A pair that fails before the run begins is replaced
    and the run tried once more; a second failure is the sandbox's fault (SandboxError)."""
    for attempt in (1, 2):
        pair = pool.acquire()
        broken = True
        try:
            result = execute(pair[0], pair[1], plan)
            broken = bool(result.broken)
            return result
        except WorkerBroken as exc:
            if attempt == 2:
                raise SandboxError(f"the sandbox workers failed twice: {exc}") from None
        finally:
            pool.release(pair, broken)
    raise AssertionError("unreachable")
