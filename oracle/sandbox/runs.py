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

import fcntl
import os
import select
import socket
import time
from dataclasses import dataclass, field

from oracle.sandbox.runtime import wire
from oracle.errors import SandboxError
from oracle.sandbox.workers import Worker, WorkerBroken, WorkerPool, WorkerTampered

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
    events: list[dict] = field(default_factory=list)
    """The test process's frames before its verdict, in order (a ``pytest`` suite streams one per
    test as it ends, so a run cut short still has the outcomes it reported)."""
    tampering: list[str] = field(default_factory=list)
    """What this run changed in its worker (found after it ended); the worker is destroyed."""
    reruns: list[dict] = field(default_factory=list)
    """Earlier attempts of this run that did not count: ``{"reason": "worker_tampered" | "starved", ...}``."""
    our_fault: str | None = None
    """Why this run has no verdict through no fault of the candidate (``worker_tampered: ...``,
    ``starved: ...``): the last resort after the reruns."""


def spec_fd(spec: dict) -> int:
    """The run's spec in a sealed memfd, read only by the run's own process after its worker forks it:
    the worker never holds a run's code or test (see runtime/zygote.py)."""
    frame = wire.dumps({"op": "spec", "spec": spec})
    fd = os.memfd_create("oracle-run-spec", os.MFD_CLOEXEC | os.MFD_ALLOW_SEALING)
    try:
        view = memoryview(frame)
        while view:
            view = view[os.write(fd, view):]
        fcntl.fcntl(fd, fcntl.F_ADD_SEALS, fcntl.F_SEAL_SEAL | fcntl.F_SEAL_SHRINK | fcntl.F_SEAL_GROW
                    | fcntl.F_SEAL_WRITE)
    except BaseException:
        os.close(fd)
        raise
    return fd


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
            cand_spec = spec_fd({**plan.candidate_spec, **candidate.spec_extra, "mode": "script"})
            to_close.append(cand_spec)
            candidate.send({"op": "run", **base, "runtime": _runtime(plan.language, "candidate"),
                            "fd_roles": ["spec", "stdin", "stdout", "stderr"]}, (cand_spec, in_r, out_w, err_w))
        elif plan.mode == "in_process":
            rep_r, rep_w = os.pipe()
            streams.add(rep_r, "report")
            to_close.append(rep_w)
            cand_spec = spec_fd({**plan.test_spec, **plan.candidate_spec, **candidate.spec_extra,  # type: ignore[dict-item]
                                 "in_process": True})
            to_close.append(cand_spec)
            candidate.send({"op": "run", **base, "runtime": _runtime(plan.language, "test"),
                            "fd_roles": ["spec", "report", "stdout", "stderr"]}, (cand_spec, rep_w, out_w, err_w))
        else:
            chan_c, chan_t = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
            rep_r, rep_w = os.pipe()
            tout_r, tout_w = os.pipe()
            streams.add(rep_r, "report")
            streams.add(tout_r, "test_output")
            cand_end, test_end = chan_c.detach(), chan_t.detach()
            to_close += [cand_end, test_end, rep_w, tout_w]
            workers["test"] = test
            cand_spec = spec_fd({**plan.candidate_spec, **candidate.spec_extra, "mode": "serve"})
            test_spec = spec_fd({**(plan.test_spec or {}), **test.spec_extra})
            to_close += [cand_spec, test_spec]
            candidate.send({"op": "run", **base, "runtime": _runtime(plan.language, "candidate"),
                            "fd_roles": ["spec", "channel", "stdout", "stderr"]}, (cand_spec, cand_end, out_w, err_w))
            test.send({"op": "run", **base, "runtime": _runtime(plan.language, "test"),
                       "fd_roles": ["spec", "channel", "report", "stdout", "stderr"]},
                      (test_spec, test_end, rep_w, tout_w, tout_w))
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
        result.verdict, result.report_error, result.events = _parse_report(report, "report" in streams.overflow)
    result.memory_limit_hit = candidate.oom_kills() + test.oom_kills() > oom_before
    result.duration_ms = (time.monotonic() - started) * 1000
    return result


def _parse_report(report: bytes, overflow: bool) -> tuple[dict | None, str | None, list[dict]]:
    """(verdict, why there is none, the frames before it). The verdict is the last frame and says
    ``op: verdict``; a run cut short keeps its complete frames (``events``) and has no verdict."""
    if overflow:
        return None, "the test's report exceeded its size limit", []
    frames: list[dict] = []
    view = memoryview(report)
    while len(view) >= 4:
        (size,) = wire._HEADER.unpack(view[:4])
        if len(view) < 4 + size:
            return None, "the test's report was cut short", frames
        try:
            frames.append(wire.loads(bytes(view[4:4 + size])))
        except wire.ChannelError as exc:
            return None, f"the test's report is unreadable: {exc}", frames
        view = view[4 + size:]
    if len(view):
        return None, "the test's report was cut short", frames
    if not frames:
        return None, None, []
    if frames[-1].get("op") != "verdict":
        return None, None, frames
    return frames[-1], None, frames[:-1]


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
                            if message.get("op") in ("exited", "refused"):
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
    refused = {role: m for role, m in exits.items() if m.get("op") == "refused"}
    if refused:
        raise WorkerTampered("; ".join(f"the {role} worker was found changed before the run: "
                                       f"{', '.join(map(str, m.get('tampered') or []))}"
                                       for role, m in refused.items()))
    for role, message in exits.items():
        if message.get("clean") is False:
            result.broken.append(f"the {role} worker could not empty its work directory")
        changed = message.get("tampered")
        if changed:
            result.tampering += [f"{role} worker: {c}" for c in map(str, changed)]
            result.broken.append(f"the {role} worker was found changed after the run")


STARVED_CPU_SHARE = 0.5
"""A timed-out run whose processes together received less CPU time than this share of its limit..."""
STARVED_WAIT_SHARE = 0.25
"""...while its threads waited, runnable, for a CPU at least this share of it, was starved by others."""
STARVED_RERUNS = 2
"""A starved run is rerun this many times at most, each time alone in its pool."""


def starved_side(result: RunResult, timeout_s: float) -> dict | None:
    """The starvation rule (constants above): the exit record of the side that was starved, when the
    run's timeout is the machine's fault, not the candidate's. A run that sleeps or blocks waits
    without being runnable, and a run that spins gets its CPU, so neither is starved; a run that
    could not get a CPU is."""
    if not result.timed_out:
        return None
    for side in (result.candidate_exit, result.test_exit):
        if not side or side.get("run_delay_s") is None:
            continue
        if side["run_delay_s"] >= STARVED_WAIT_SHARE * timeout_s and \
                float(side.get("cpu_total_s") or 0.0) < STARVED_CPU_SHARE * timeout_s:
            return side
    return None


def starved(result: RunResult, timeout_s: float) -> bool:
    return starved_side(result, timeout_s) is not None


def _attempt(pool: WorkerPool, plan: RunPlan, reruns: list[dict]) -> RunResult:
    """One run on a pair from ``pool``. A pair that fails before the run begins is replaced and the run
    tried once more: a worker found changed is rerun on a fresh pair (recorded in ``reruns``), and
    ``our_fault`` says so when even that fails; any other second failure is the sandbox's
    (SandboxError)."""
    for attempt in (1, 2):
        pair = pool.acquire()
        broken = True
        try:
            result = execute(pair[0], pair[1], plan)
            broken = bool(result.broken)
            return result
        except WorkerTampered as exc:
            reruns.append({"reason": "worker_tampered", "detail": str(exc)[:500]})
            if attempt == 2:
                return RunResult(our_fault=f"worker_tampered: {exc}")
        except WorkerBroken as exc:
            if attempt == 2:
                raise SandboxError(f"the sandbox workers failed twice: {exc}") from None
        finally:
            pool.release(pair, broken)
    raise AssertionError("unreachable")


def run_in_pool(pool: WorkerPool, plan: RunPlan) -> RunResult:
    """Run ``plan`` on ``pool`` (blocking): reruns a run whose worker was found changed (once) and a
    starved run (up to STARVED_RERUNS times, alone in the pool); every rerun is in ``reruns``."""
    reruns: list[dict] = []
    with pool.shared():
        result = _attempt(pool, plan, reruns)
    tries = 0
    while result.our_fault is None and (side := starved_side(result, plan.timeout_s)) is not None:
        if tries == STARVED_RERUNS:
            result = RunResult(our_fault=f"starved: no CPU for the run in {STARVED_RERUNS + 1} tries (last: "
                                         f"{side.get('cpu_total_s')} s CPU, waited {side.get('run_delay_s')} s "
                                         f"for one, limit {plan.timeout_s} s)")
            break
        tries += 1
        reruns.append({"reason": "starved", "cpu_total_s": [(e or {}).get("cpu_total_s") for e in
                                                            (result.candidate_exit, result.test_exit)],
                       "run_delay_s": [(e or {}).get("run_delay_s") for e in
                                       (result.candidate_exit, result.test_exit)]})
        with pool.exclusive():
            result = _attempt(pool, plan, reruns)
    result.reruns = reruns
    return result
