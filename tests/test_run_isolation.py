"""Runs that cannot touch each other, on every sandbox backend here (the run-isolation issue).

One candidate must not decide the verdict of any other: not by changing the warm worker that later
runs are forked from, not by leaving kernel objects behind, not by reading what the worker held for
earlier runs, and not by starving a sibling that runs at the same time. Each attack runs in a task
beside honest candidates (one worker pair, so every later run comes from the same worker), then the
next task runs on the same pool; every honest candidate must keep its verdict.

Where the attack is refused outright, the host injects the fault itself (as root, on the worker's
real process) to prove the check behind the refusal: a worker found changed is destroyed, the run
that changed it gets a ``tampering`` concern, the affected run is rerun on a fresh worker.
"""

from __future__ import annotations

import asyncio
import os
import secrets
import subprocess
import sys
import threading
import time

import pytest

from oracle.results.concerns import SandboxFailure, Tampering
from oracle.config.model import OracleConfig
from oracle.results.result import Status
from oracle.strategies.protocol import EvaluationContext
from oracle.tasks.task import Task, Trajectory
from oracle.strategies.verifier.strategy import VerifierStrategy
from oracle.sandbox import runs as runs_mod
from oracle.sandbox.runs import RunResult, starved
from oracle.sandbox.runtime import bpf, worker_state
from oracle.sandbox import slots
from oracle.sandbox.workers import ZYGOTE_MODULE, Worker, WorkerPool
from tests.plugins.sandbox_backends import on_each_backend, strongest_backend
from tests.test_sandbox_seccomp import run_bpf

pytestmark = pytest.mark.sandbox
ARCH = bpf.machine()
HONEST = "def add(a, b):\n    return a + b\n"
ADD_TESTS = [{"kind": "call", "name": "call", "call": "add(2, 3)", "expected": 5},
             {"kind": "assert", "name": "forks", "code": "import os\nfor _ in range(3):\n    pid = os.fork()\n"
                                                         "    if pid == 0:\n        os._exit(0)\n"
                                                         "    os.waitpid(pid, 0)\n"
                                                         "assert add(1, 1) == 2\n"}]


def _task(tests=None, entry="add", tid="add") -> Task:
    return Task(id=tid, prompt="", language="python", entry_point=entry, tests=tests or ADD_TESTS)


def _run(strategy: VerifierStrategy, backend: str, task: Task, trajectories, **verifier):
    config = OracleConfig(verifier={"backend": backend, "timeout_s": 6, "workers": 1, **verifier})
    return asyncio.run(strategy.evaluate(EvaluationContext(task=task, trajectories=tuple(trajectories),
                                                           config=config)))


def _outcomes(result, cid: str) -> list[str]:
    return [t["outcome"] for t in result.candidate(cid).details["tests"]]


def _honest_all_pass(result, ids) -> None:
    assert result.status is Status.ok, result.error
    for cid in ids:
        c = result.candidate(cid)
        assert c.passed is True and c.score == 1.0, (cid, c.details.get("tests"))


# -- the per-run filter, on its real bytes -----------------------------------------------------

@pytest.mark.parametrize("arch", sorted(bpf.SYSCALLS))
def test_the_run_filter_keeps_every_reach_to_the_caller_itself(arch):
    nr, audit = bpf.SYSCALLS[arch], bpf.AUDIT_ARCH[arch]
    program = bpf.run_filter(arch, [7, 3, -7])
    eperm = bpf.RET_ERRNO | bpf.EPERM

    def verdict(name, *args):
        return run_bpf(program, nr[name], audit, args)

    for name in bpf.SELF_ONLY:
        assert verdict(name, 0) == bpf.RET_ALLOW, name
        assert verdict(name, 7) == eperm and verdict(name, 4242) == eperm, name
        assert verdict(name, (1 << 32) | 7) == eperm, name  # the kernel reads the low word only
    for name in ("setpriority", "ioprio_set", "sched_setaffinity", "sched_setscheduler", "sched_setattr"):
        for args in ((0, 0, 19), (1, 0, 0), (2, 61000, 0), (0, 7, 0)):  # even the caller's own
            assert verdict(name, *args) == eperm, (name, args)
    for name in bpf.SIGNALS:
        for target in (7, 3, -7, -1):
            assert verdict(name, target, 9) == eperm, (name, target)
        assert verdict(name, 4242, 9) == bpf.RET_ALLOW, name  # the run's own processes
    for name in bpf.RUN_DENIED:
        assert verdict(name, 0, 0) == eperm, name
    assert verdict("socket" if arch == "x86_64" else "clone", 0) == bpf.RET_ALLOW  # the base filter's job
    assert run_bpf(program, nr["prlimit64"], 0x40000003, (7,)) == bpf.RET_ALLOW  # foreign arch: base filter kills


def test_the_starvation_rule():
    def res(cpu, delay, timed_out=True, side="candidate_exit"):
        return RunResult(timed_out=timed_out, **{side: {"cpu_total_s": cpu, "run_delay_s": delay}})

    assert starved(res(0.1, 3.0), 4.0)                   # could not get a CPU
    assert starved(res(0.1, 3.0, side="test_exit"), 4.0)
    assert not starved(res(0.1, 0.05), 4.0)              # slept or blocked
    assert not starved(res(3.9, 3.0), 4.0)               # got its CPU (spun in many processes)
    assert not starved(res(0.1, 3.0, timed_out=False), 4.0)
    assert not starved(RunResult(timed_out=True, candidate_exit={"cpu_total_s": 0.0, "run_delay_s": None}), 4.0)
    edge = runs_mod.STARVED_WAIT_SHARE * 4.0
    assert starved(res(0.0, edge), 4.0) and not starved(res(0.0, edge - 0.01), 4.0)


def test_the_sysv_sweep_finds_and_removes_objects_of_a_uid():
    import ctypes
    libc = ctypes.CDLL(None, use_errno=True)
    key = 0x0AC10000 + secrets.randbelow(0xFFFF)
    ident = libc.shmget(key, 4096, 0o1600)
    assert ident >= 0
    try:
        found = worker_state.sysv_objects(os.getuid())
        assert ("shm", ident) in found
        assert worker_state.remove_sysv([("shm", ident)]) == 1
        assert ("shm", ident) not in worker_state.sysv_objects(os.getuid())
    finally:
        libc.shmctl(ident, 0, None)


# -- a run cannot change its worker ----------------------------------------------------------

REACH = r'''
import ctypes, os, resource, signal
libc = ctypes.CDLL(None, use_errno=True)

def _ancestors():
    out, pid = [], os.getpid()
    while True:
        try:
            with open("/proc/%d/stat" % pid, "rb") as fh:
                pid = int(fh.read().rsplit(b")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            break
        if pid <= 0 or pid in out:
            break
        out.append(pid)
    return out

def _try(done, label, call):
    try:
        if call() in (None, 0) or isinstance(call, int):
            done.append(label)
    except (OSError, ValueError, TypeError):
        pass

def reach():
    done = []
    ancestors = _ancestors()
    for pid in ancestors:
        for name in sorted(n for n in dir(resource) if n.startswith("RLIMIT_")):
            which = getattr(resource, name)
            def lower(pid=pid, which=which):
                soft, hard = resource.prlimit(pid, which)
                new = 1 if hard == resource.RLIM_INFINITY else max(0, hard - 1)
                resource.prlimit(pid, which, (min(soft, new), new))
            _try(done, "prlimit %s of %d" % (name, pid), lower)
        _try(done, "nice of %d" % pid, lambda: os.setpriority(os.PRIO_PROCESS, pid, 19))
        _try(done, "affinity of %d" % pid, lambda: os.sched_setaffinity(pid, {0}))
        _try(done, "scheduler of %d" % pid, lambda: os.sched_setscheduler(pid, os.SCHED_IDLE, os.sched_param(0)))
        if libc.syscall(IOPRIO_SET, 1, pid, (3 << 13)) == 0:
            done.append("io priority of %d" % pid)
        if libc.syscall(PIDFD_OPEN, pid, 0) >= 0:
            done.append("pidfd of %d" % pid)
        _try(done, "SIGSTOP to %d" % pid, lambda: os.kill(pid, signal.SIGSTOP))
        try:
            _try(done, "SIGSTOP to group %d" % os.getpgid(pid), lambda: os.killpg(os.getpgid(pid), signal.SIGSTOP))
        except OSError:
            pass
    _try(done, "my own nice", lambda: os.setpriority(os.PRIO_PROCESS, 0, 19))
    _try(done, "my own scheduler", lambda: os.sched_setscheduler(0, os.SCHED_IDLE, os.sched_param(0)))
    _try(done, "my own affinity", lambda: os.sched_setaffinity(0, {0}))
    _try(done, "nice of my user", lambda: os.setpriority(os.PRIO_USER, 0, 19))
    _try(done, "nice of my group", lambda: os.setpriority(os.PRIO_PGRP, 0, 19))
    _try(done, "SIGSTOP to everyone", lambda: os.kill(-1, signal.SIGSTOP))
    return done if ancestors else ["no ancestor found"]
'''.replace("IOPRIO_SET", str(bpf.SYSCALLS[ARCH]["ioprio_set"])).replace(
    "PIDFD_OPEN", str(bpf.SYSCALLS[ARCH]["pidfd_open"]))


@on_each_backend
def test_a_run_cannot_change_its_worker_and_later_runs_keep_their_verdicts(backend):
    strategy = VerifierStrategy()
    try:
        task = _task([{"kind": "call", "name": "reach", "call": "reach()", "expected": []}, *ADD_TESTS],
                     entry="reach")
        attacker = Trajectory(id="reach", code=REACH + HONEST)
        honest = [Trajectory(id=f"honest{i}", code=HONEST + "def reach():\n    return []\n") for i in range(3)]
        result = _run(strategy, backend, task, [honest[0], attacker, *honest[1:]])
        _honest_all_pass(result, ["honest0", "honest1", "honest2"])
        # Every reach was refused: the attacker's own report is empty, so its call passes.
        assert _outcomes(result, "reach")[0] == "pass", result.candidate("reach").details["tests"][0]
        nxt = _run(strategy, backend, _task(tid="next"), [Trajectory(id="next", code=HONEST)])
        _honest_all_pass(nxt, ["next"])
    finally:
        strategy.close()


# -- nothing a run leaves reaches the next ---------------------------------------------------

LEAVE = r'''
import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
KEY = 0x0AC1E0
PLACES = [os.getcwd(), os.environ.get("HOME", "."), "/tmp", "/dev/shm", "/dev/mqueue"]

def leave():
    made = []
    for kind, call in (("shm", lambda: libc.shmget(KEY, 4096, 0o1666)),
                       ("private shm", lambda: libc.shmget(0, 4096, 0o1666)),
                       ("msg", lambda: libc.msgget(KEY + 1, 0o1666)),
                       ("sem", lambda: libc.semget(KEY + 2, 1, 0o1666)),
                       ("mqueue", lambda: libc.syscall(MQ_OPEN, b"/oracle-left", 0o100 | 2, 0o666, None))):
        if call() >= 0:
            made.append(kind)
    for place in PLACES:
        try:
            with open(os.path.join(place, "oracle-left-behind"), "w") as fh:
                fh.write("x")
        except OSError:
            pass
    try:
        os.mkfifo("oracle-left-fifo")
    except OSError:
        pass
    if os.fork() == 0:
        os.setsid()
        import fcntl, time
        fh = open(__file__ if os.path.exists(__file__) else "/proc/self/stat")
        try:
            fcntl.flock(fh, fcntl.LOCK_SH)
        except OSError:
            pass
        time.sleep(60)
        os._exit(0)
    return made

def look():
    found = []
    for kind in ("shm", "msg", "sem"):
        try:
            with open("/proc/sysvipc/" + kind) as fh:
                rows = fh.read().splitlines()[1:]
        except OSError:
            continue
        uid = str(os.getuid())
        found += ["%s %s" % (kind, r.split()[1]) for r in rows if uid in r.split()[4:8]]
    if libc.shmget(KEY, 0, 0) >= 0:
        found.append("shm by key")
    if libc.syscall(MQ_OPEN, b"/oracle-left", 0, 0, None) >= 0:
        found.append("mqueue by name")
    for place in PLACES:
        if os.path.exists(os.path.join(place, "oracle-left-behind")):
            found.append("file in " + place)
    if os.path.exists("oracle-left-fifo"):
        found.append("fifo")
    return found
'''.replace("MQ_OPEN", str(bpf.SYSCALLS[ARCH]["mq_open"]))


@on_each_backend
def test_kernel_objects_files_and_daemons_do_not_reach_the_next_run(backend):
    strategy = VerifierStrategy()
    try:
        task = _task([{"kind": "call", "name": "leave", "call": "leave()", "expected": []},
                      {"kind": "call", "name": "look", "call": "look()", "expected": []},
                      {"kind": "call", "name": "leave_again", "call": "leave()", "expected": []},
                      {"kind": "call", "name": "look_again", "call": "look()", "expected": []}], entry="look")
        result = _run(strategy, backend, task,
                      [Trajectory(id="first", code=LEAVE), Trajectory(id="second", code=LEAVE)])
        assert result.status is Status.ok, result.error
        for c in result.candidates:
            assert _outcomes(result, c.id) == ["pass"] * 4, c.details["tests"]
        nxt = _run(strategy, backend, _task(tid="next"), [Trajectory(id="next", code=HONEST)])
        _honest_all_pass(nxt, ["next"])
    finally:
        strategy.close()


# -- a run inherits nothing of another -------------------------------------------------------

HUNT = r'''
import ctypes, os, re
MINE = "HUNT-MARK-%s"
PATTERN = re.compile(rb"HUNT-MARK-[0-9a-f]{12}")

def _memory():
    seen = set()
    with open("/proc/self/maps") as fh:
        maps = fh.read().splitlines()
    for line in maps:
        parts = line.split()
        if not parts[1].startswith("r") or (len(parts) > 5 and parts[5] not in ("[heap]", "[stack]")):
            continue  # anonymous memory, heap and stack: where an interpreter keeps what it held
        lo, hi = (int(x, 16) for x in parts[0].split("-"))
        seen.update(m.decode() for m in PATTERN.findall(ctypes.string_at(lo, hi - lo)))
    return seen

def _files():
    seen = set()
    for top in {os.getcwd(), os.environ.get("HOME", "."), "/tmp", "/dev/shm", "/var/tmp", "/run", "/src", "/work"}:
        for root, _dirs, files in os.walk(top):
            for name in files:
                try:
                    with open(os.path.join(root, name), "rb") as fh:
                        seen.update(m.decode() for m in PATTERN.findall(fh.read(1 << 20)))
                except OSError:
                    pass
    return seen

def _descriptors():
    seen = set()
    for fd in os.listdir("/proc/self/fd"):
        try:
            seen.update(m.decode() for m in PATTERN.findall(os.pread(int(fd), 1 << 20, 0)))
        except OSError:
            pass
    return seen

def hunt():
    seen = _memory() | _files() | _descriptors()
    return {"self": MINE in seen, "others": sorted(seen - {MINE})}
'''


@on_each_backend
def test_a_candidate_finds_no_earlier_candidate_in_its_memory_files_or_descriptors(backend):
    def honest(i):
        token = secrets.token_hex(6)
        code = f"def add(a, b):\n    return a + b  # HUNT-MARK-{token}\nSPARE = 'HUNT-MARK-{token}' * 200\n" \
               "def hunt():\n    return {'self': True, 'others': []}\n"
        return Trajectory(id=f"honest{i}", code=code)

    hunter = Trajectory(id="hunter", code=HUNT % secrets.token_hex(6))
    hunt_test = {"kind": "call", "name": "hunt", "call": "hunt()", "expected": {"self": True, "others": []}}
    strategy = VerifierStrategy()
    try:
        first = _run(strategy, backend, _task([hunt_test, ADD_TESTS[0]], entry="hunt"),
                     [honest(0), honest(1), hunter, honest(2)])
        assert first.status is Status.ok, first.error
        assert _outcomes(first, "hunter")[0] == "pass", first.candidate("hunter").details["tests"][0]
        second = _run(strategy, backend, _task([hunt_test], entry="hunt", tid="next"), [hunter])
        assert _outcomes(second, "hunter") == ["pass"], second.candidate("hunter").details["tests"]
    finally:
        strategy.close()


# -- a worker found changed is destroyed; the affected run is rerun --------------------------

def _zygotes(pool: WorkerPool, role: str) -> list[int]:
    pids = []
    for worker in list(pool._all):
        if worker.role != role or worker._slot is None:
            continue
        for pid in slots.processes_of_uid(worker._slot.uid):
            try:
                with open(f"/proc/{pid}/cmdline", "rb") as fh:
                    if ZYGOTE_MODULE.encode() in fh.read():
                        pids.append(pid)
            except OSError:
                pass
    return pids


def _tamper(pid: int) -> None:
    """Lower the soft RLIMIT_NOFILE of ``pid`` from a process of its own uid (what a run could do
    without the per-run filter; root here may lack CAP_SYS_RESOURCE, so it takes the uid instead)."""
    uid = _uid_of(pid)
    code = ("import resource, sys\npid = int(sys.argv[1])\nsoft, hard = resource.prlimit(pid, resource.RLIMIT_NOFILE)\n"
            "resource.prlimit(pid, resource.RLIMIT_NOFILE, (max(16, soft - 7), hard))\n")
    subprocess.run(["/usr/bin/python3", "-I", "-c", code, str(pid)], check=True, timeout=10,
                   preexec_fn=lambda: (os.setgroups([]), os.setresgid(uid, uid, uid), os.setresuid(uid, uid, uid)))


def _children_of(pids: list[int]) -> list[int]:
    """Processes forked from ``pids`` other than ``pids`` themselves (a wrapper's zygote is listed too)."""
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as fh:
                    ppid = int(fh.read().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            if ppid in pids and int(entry) not in pids:
                found.append(int(entry))
    return found


def _tamper_once_running(zygotes: list[int], within_s: float, alive_s: float = 0.5) -> None:
    """Wait until one run forked from ``zygotes`` has been alive for ``alive_s``, then tamper.

    A candidate's short runs (loading its module, a quick test) come and go in milliseconds; only
    the slow run lives this long, so the tamper lands inside it whatever the machine's load, never
    between two runs (which the pre-fork check would report as a change between runs instead)."""
    deadline = time.monotonic() + within_s
    first_seen: dict[int, float] = {}
    while time.monotonic() < deadline:
        now = time.monotonic()
        alive = set(_children_of(zygotes))
        first_seen = {pid: first_seen.get(pid, now) for pid in alive}
        if any(now - t >= alive_s for t in first_seen.values()):
            break
        time.sleep(0.02)
    for pid in zygotes:
        _tamper(pid)


def _uid_of(pid: int) -> int:
    with open(f"/proc/{pid}/status") as fh:
        return int(next(line for line in fh if line.startswith("Uid:")).split()[1])


@pytest.mark.skipif(not slots.can_drop_privileges(), reason="the host injects the fault as root")
@on_each_backend
def test_a_worker_changed_between_runs_is_replaced_and_the_run_rerun(backend):
    strategy = VerifierStrategy()
    try:
        _honest_all_pass(_run(strategy, backend, _task(), [Trajectory(id="warm", code=HONEST)]), ["warm"])
        pool = next(iter(strategy._pools.values()))
        targets = _zygotes(pool, "candidate")
        assert targets, "no warm candidate worker found"
        for pid in targets:
            _tamper(pid)
        result = _run(strategy, backend, _task(), [Trajectory(id="honest", code=HONEST)])
        _honest_all_pass(result, ["honest"])
        first = result.candidate("honest").details["tests"][0]
        assert [r["reason"] for r in first["reruns"]] == ["worker_tampered"], first
        assert "RLIMIT_NOFILE" in first["reruns"][0]["detail"]
        assert result.provenance.execution.reruns == {"worker_tampered": 1}
        assert not any(isinstance(c, SandboxFailure) for c in result.concerns)
    finally:
        strategy.close()


@pytest.mark.slow
@pytest.mark.exclusive  # the host's tamper must land inside the slow run: no other test's load delays it
@pytest.mark.skipif(not slots.can_drop_privileges(), reason="the host injects the fault as root")
@on_each_backend
def test_a_worker_changed_during_a_run_blames_that_run_and_spares_the_next(backend):
    strategy = VerifierStrategy()
    slow = "import time\ndef add(a, b):\n    time.sleep(4.5)\n    return a + b\n"
    try:
        _honest_all_pass(_run(strategy, backend, _task(), [Trajectory(id="warm", code=HONEST)]), ["warm"])
        pool = next(iter(strategy._pools.values()))
        targets = _zygotes(pool, "candidate")
        assert targets
        # Tamper once the slow run is under way (a run forked from the zygote that stays alive),
        # not after a fixed delay or the first fork: on a fast or a loaded machine either can land
        # before that run or between two runs.
        tamperer = threading.Thread(target=_tamper_once_running, args=(targets, 15.0))
        tamperer.start()
        result = _run(strategy, backend, _task(ADD_TESTS[:1]),
                      [Trajectory(id="during", code=slow), Trajectory(id="after", code=HONEST)], timeout_s=12)
        tamperer.join()
        assert result.status is Status.ok, result.error
        during = result.candidate("during").details["tests"][0]
        assert during["outcome"] == "error" and any("RLIMIT_NOFILE" in t for t in during["tampering"]), during
        concern = next(c for c in result.concerns if isinstance(c, Tampering))
        assert concern.candidates == ["during"] and "RLIMIT_NOFILE" in concern.evidence.changes["during"][0]
        _honest_all_pass(result, ["after"])
    finally:
        strategy.close()


@pytest.mark.slow
@pytest.mark.skipif(not slots.can_drop_privileges(), reason="the host injects the fault as root")
def test_when_even_the_rerun_meets_a_changed_worker_the_candidate_is_unscored_not_zero(monkeypatch):
    real_start = Worker.start

    def start_then_tamper(self):
        real_start(self)
        if self.role == "candidate":
            for pid in slots.processes_of_uid(self._slot.uid):
                with open(f"/proc/{pid}/cmdline", "rb") as fh:
                    if ZYGOTE_MODULE.encode() in fh.read():
                        _tamper(pid)

    monkeypatch.setattr(Worker, "start", start_then_tamper)
    strategy = VerifierStrategy()
    try:
        result = _run(strategy, strongest_backend(), _task(ADD_TESTS[:1]), [Trajectory(id="honest", code=HONEST),
                                                                    Trajectory(id="no_code", answer="I don't know")])
        alone = _run(strategy, strongest_backend(), _task(ADD_TESTS[:1]), [Trajectory(id="honest", code=HONEST)])
    finally:
        strategy.close()
    # When our fault hits every candidate that ran, the evaluation itself fails, naming it.
    assert alone.status is Status.failed and "worker_tampered" in alone.error.message
    assert result.status is Status.ok, result.error
    assert result.candidate("no_code").score == 0.0  # its own fault: scored
    c = result.candidate("honest")
    test = c.details["tests"][0]
    assert test["outcome"] == "error" and test["our_fault"] and test["message"].startswith("worker_tampered")
    assert len(test["reruns"]) == 2
    assert c.score is None and c.passed is None and c.status is Status.failed
    failure = next(x for x in result.concerns if isinstance(x, SandboxFailure))
    assert failure.candidates == ["honest"]


# -- a run cannot starve its sibling ---------------------------------------------------------

SPIN = ("import os\ndef add(a, b):\n    for _ in range(24):\n        if os.fork() == 0:\n            while True:\n"
        "                pass\n    while True:\n        pass\n")
WORK = ("import time\ndef add(a, b):\n    end = time.process_time() + 0.6\n    while time.process_time() < end:\n"
        "        pass\n    return a + b\n")


@pytest.mark.exclusive
@pytest.mark.slow  # about 7 s a backend
@on_each_backend
def test_a_spinning_candidate_does_not_starve_its_sibling(backend):
    tests = [{"kind": "call", "name": f"call{i}", "call": "add(2, 3)", "expected": 5, "timeout_s": 3}
             for i in range(3)]
    strategy = VerifierStrategy()
    try:
        result = _run(strategy, backend, _task(tests), [Trajectory(id="spinner", code=SPIN),
                                                        Trajectory(id="honest", code=WORK)], workers=2, max_pids=48)
    finally:
        strategy.close()
    # The spinner times out (on a machine loaded by others it may be judged starved: unscored, never a pass).
    assert "pass" not in _outcomes(result, "spinner")
    _honest_all_pass(result, ["honest"])


def _spinners(n: int) -> list[subprocess.Popen]:
    # each in its own session: with autogroup scheduling a session shares one CPU weight
    return [subprocess.Popen([sys.executable, "-c", "while True:\n    pass\n"], start_new_session=True)
            for _ in range(n)]


def _stop(procs: list[subprocess.Popen]) -> None:
    for p in procs:
        p.kill()
    for p in procs:
        p.wait()


@pytest.mark.exclusive
@pytest.mark.slow  # 10 to 14 s a backend
@on_each_backend
def test_a_starved_run_is_rerun_alone_and_keeps_its_verdict(backend, monkeypatch):
    """Host processes outside every sandbox cgroup take the CPU; once the run is judged starved, the
    rerun waits until the pool is idle, and the load is gone by then (the test stops it there)."""
    procs = _spinners(12 * (os.cpu_count() or 1))
    real_exclusive = WorkerPool.exclusive

    def exclusive_after_the_load(self):
        _stop(procs)
        return real_exclusive(self)

    monkeypatch.setattr(WorkerPool, "exclusive", exclusive_after_the_load)
    strategy = VerifierStrategy()
    try:
        result = _run(strategy, backend, _task([{"kind": "call", "name": "call", "call": "add(2, 3)", "expected": 5,
                                                 "timeout_s": 3}]), [Trajectory(id="honest", code=WORK)])
    finally:
        _stop(procs)
        strategy.close()
    _honest_all_pass(result, ["honest"])
    test = result.candidate("honest").details["tests"][0]
    assert [r["reason"] for r in test["reruns"]] == ["starved"], test
    assert result.provenance.execution.reruns == {"starved": 1}


@pytest.mark.exclusive
@pytest.mark.slow  # about 10 s: three starved tries
def test_a_run_starved_every_time_is_our_fault_not_a_timeout():
    procs = _spinners(12 * (os.cpu_count() or 1))
    strategy = VerifierStrategy()
    try:
        result = _run(strategy, strongest_backend(), _task([{"kind": "call", "name": "call", "call": "add(2, 3)",
                                                      "expected": 5, "timeout_s": 1.0}]),
                      [Trajectory(id="honest", code=WORK), Trajectory(id="no_code", answer="I don't know")])
    finally:
        _stop(procs)
        strategy.close()
    assert result.status is Status.ok, result.error
    c = result.candidate("honest")
    test = c.details["tests"][0]
    assert test["outcome"] == "error" and test["our_fault"] and test["message"].startswith("starved"), test
    assert [r["reason"] for r in test["reruns"]] == ["starved", "starved"]
    assert c.score is None and any(isinstance(x, SandboxFailure) for x in result.concerns)


@pytest.mark.slow
def test_sigstop_of_the_run_itself_is_still_its_own_timeout():
    """A run that stops itself waits without being runnable: its timeout is its own, not starvation."""
    code = "import os, signal\ndef add(a, b):\n    os.kill(os.getpid(), signal.SIGSTOP)\n    return a + b\n"
    strategy = VerifierStrategy()
    try:
        result = _run(strategy, strongest_backend(), _task([{"kind": "call", "name": "call", "call": "add(2, 3)",
                                                      "expected": 5, "timeout_s": 1.0}]),
                      [Trajectory(id="stopped", code=code)])
    finally:
        strategy.close()
    test = result.candidate("stopped").details["tests"][0]
    assert test["outcome"] == "timeout" and "reruns" not in test, test
    assert result.candidate("stopped").score == 0.0



# -- another caller of `oracle serve` --------------------------------------------------------

@pytest.mark.slow
@on_each_backend
def test_a_second_serve_caller_keeps_its_honest_verdicts(backend, tmp_path):
    import httpx

    from tests.serve_support import dumps, need_serve_extra, serve

    need_serve_extra()

    def body(tid, trajectories, tests, entry):
        return {"task": {"id": tid, "prompt": "", "language": "python", "entry_point": entry, "tests": tests,
                         "evaluator": "verifier"}, "trajectories": trajectories}

    attack_tests = [{"kind": "call", "name": "reach", "call": "reach()", "expected": []},
                    {"kind": "call", "name": "leave", "call": "leave()", "expected": []}]
    attackers = [{"id": "reach", "code": REACH + "def leave():\n    return []\n"},
                 {"id": "leave", "code": LEAVE + "def reach():\n    return []\n"},
                 {"id": "hunter", "code": HUNT % secrets.token_hex(6) + "def reach():\n    return []\n"
                                                                     "def leave():\n    return []\n"}]
    config = {"verifier": {"backend": backend, "workers": 1, "timeout_s": 6}}
    with serve(tmp_path, config=config) as served:
        with httpx.Client(base_url=served.base_url, timeout=120) as first, \
                httpx.Client(base_url=served.base_url, timeout=120) as second:
            sunk = first.post("/v1/evaluate", content=dumps(body("attack", attackers, attack_tests, "reach")))
            assert sunk.status_code == 200, sunk.text
            reply = second.post("/v1/evaluate", content=dumps(body(
                "honest", [{"id": f"h{i}", "code": HONEST} for i in range(3)], ADD_TESTS, "add")))
    assert reply.status_code == 200, reply.text
    result = reply.json()["result"]
    # Landlock is below the default required isolation: the verdict stands, and asks a human to accept it.
    assert result["status"] == ("pending" if backend == "landlock" else "ok"), result["status"]
    assert result["result"]["status"] == "ok", result["result"]
    for c in result["result"]["candidates"]:
        assert c["passed"] is True and c["score"] == 1.0, c
