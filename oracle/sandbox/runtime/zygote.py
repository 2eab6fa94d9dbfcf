"""The warm worker inside a sandbox: it forks one fresh process per run and never runs candidate code.

Why: starting a sandbox and an interpreter per test costs tens of milliseconds; forking a warm,
clean interpreter costs about one. Each run's process is forked from this process, which has run
no candidate or test code, so every run starts clean. After each run this process kills every
process the run left behind (it is their subreaper, so daemons that double-fork still come back to
it), reaps them, and empties the work directory, so no file, thread or daemon reaches the next run.
This process is not dumpable: a run's process, though it has the same uid, cannot ptrace it or read
its memory.

No run can read another's data, and none can change what later runs start from:
- this process never holds a run's code, test, inputs or outputs: the host puts the run's spec in a
  sealed memfd (role ``spec``) that only the forked child reads, so what a run inherits in memory
  is this clean interpreter and nothing of an earlier run;
- every run inherits the per-run seccomp filter (bpf.py), which this process installs on itself
  before its first fork, and leaves this process's session before anything of the run executes: no
  limit change for any pid but its own, no scheduling change at all, no signal to this process or
  its ancestors, no System V IPC or POSIX message queue;
- this process checks its own attributes (worker_state.py) before each fork and after each run, and
  sweeps every System V object of its uid. A difference is reported (``tampered``) and this process
  exits: the host destroys the sandbox and reruns what was affected on a fresh one.

Control protocol with the host (one stream socket, frames as in wire.py): the host sends ``run``
with the run's file descriptors attached (SCM_RIGHTS) and may send ``kill``; this process answers
``ready`` once, ``exited`` per run, or ``refused`` (with ``tampered``) instead of running it when the
pre-fork check fails.
"""

from __future__ import annotations

import ctypes
import fcntl
import gc
import json
import os
import resource
import select
import shutil
import signal
import socket
import stat
import struct
import sys
import time

from . import bpf, candidate_side, pytest_side, rpc, test_side, wire, worker_state  # noqa: F401 (rpc: preloaded for every run)

HERE = os.path.dirname(os.path.abspath(__file__))

TYPE_CHECKING = False  # type checkers read the block below; at run time nothing more is imported
if TYPE_CHECKING:
    from typing import Any

PRELOAD = ("math", "re", "collections", "itertools", "functools", "typing", "string", "heapq", "bisect",
           "hashlib", "random", "statistics", "fractions", "decimal", "json", "copy", "operator",
           "datetime", "sqlite3", "traceback", "unittest", "dataclasses", "textwrap", "array")
PR_SET_PDEATHSIG, PR_SET_DUMPABLE, PR_SET_CHILD_SUBREAPER = 1, 4, 36
_libc = ctypes.CDLL(None, use_errno=True)
_HEADER = struct.Struct(">I")
# Run file descriptors land at these numbers in the run's process.
FD_CHANNEL, FD_REPORT = 3, 4


def _send(sock: socket.socket, message: dict) -> None:
    sock.sendall(wire.dumps(message))


def _recv_exact(sock: socket.socket, n: int, fds: list[int]) -> bytes | None:
    buf = b""
    while len(buf) < n:
        data, got, _flags, _addr = socket.recv_fds(sock, n - len(buf), 16)
        fds.extend(got)
        if not data:
            return None
        buf += data
    return buf


def _recv(sock: socket.socket) -> tuple[dict | None, list[int]]:
    fds: list[int] = []
    head = _recv_exact(sock, 4, fds)
    if head is None:
        return None, fds
    body = _recv_exact(sock, _HEADER.unpack(head)[0], fds)
    if body is None:
        return None, fds
    return wire.loads(body), fds


def _children_of(pid: int) -> list[int]:
    try:
        out: list[int] = []
        for tid in os.listdir(f"/proc/{pid}/task"):
            fd = os.open(f"/proc/{pid}/task/{tid}/children", os.O_RDONLY | os.O_CLOEXEC)
            try:
                data = b""
                while chunk := os.read(fd, 65536):
                    data += chunk
            finally:
                os.close(fd)
            out.extend(map(int, data.split()))
        return out
    except (OSError, ValueError):
        return []


_HAS_CHILDREN_FILE = os.path.exists(f"/proc/{os.getpid()}/task/{os.getpid()}/children")


def descendants() -> list[int]:
    """Every process below this one (children are re-parented here: we are their subreaper)."""
    me = os.getpid()
    if _HAS_CHILDREN_FILE:
        found, todo = [], [me]
        while todo:
            kids = _children_of(todo.pop())
            found.extend(kids)
            todo.extend(kids)
        return found
    parent: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat", "rb") as fh:
                    ppid = int(fh.read().rsplit(b")", 1)[1].split()[1])
            except (OSError, ValueError, IndexError):
                continue
            parent.setdefault(ppid, []).append(int(entry))
    found, todo = [], [me]
    while todo:
        kids = parent.get(todo.pop(), [])
        found.extend(kids)
        todo.extend(kids)
    return found


def _reap() -> None:
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


def sweep() -> int:
    """Kill and reap everything the run left behind; the number of processes killed."""
    killed: set[int] = set()
    for _ in range(2000):
        pids = descendants()
        if not pids:
            break
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
                killed.add(pid)
            except ProcessLookupError:
                pass
        _reap()
        time.sleep(0.0005)
    _reap()
    return len(killed)


def _make_writable(path: str) -> None:
    for root, dirs, _files in os.walk(path):
        for d in dirs:
            try:
                os.chmod(os.path.join(root, d), stat.S_IRWXU)
            except OSError:
                pass


def wipe(path: str) -> bool:
    """Empty ``path`` (the run's files, whatever their modes); True when it is empty afterwards."""
    try:
        if os.stat(path).st_uid == os.getuid():
            os.chmod(path, stat.S_IRWXU)
        entries = os.listdir(path)
    except OSError:
        return not os.path.exists(path)
    if not entries:
        return True
    for name in entries:
        full = os.path.join(path, name)
        try:
            os.rmdir(full)  # the common case: the run's own directory, left empty
            continue
        except OSError:
            pass
        try:
            if os.path.isdir(full) and not os.path.islink(full):
                _make_writable(full)
                os.chmod(full, stat.S_IRWXU)
                shutil.rmtree(full, ignore_errors=True)
            else:
                os.unlink(full)
        except OSError:
            pass
    try:
        return not os.listdir(path)
    except OSError:
        return False


def _place_fds(fds: list[int], roles: list[str]) -> None:
    """Move the run's descriptors to their fixed numbers and close everything else."""
    high = [fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 100) for fd in fds]  # above every target number
    for fd in fds:
        os.close(fd)
    target = {"stdin": 0, "stdout": 1, "stderr": 2, "channel": FD_CHANNEL, "report": FD_REPORT}
    placed = set()
    for fd, role in zip(high, roles):
        os.dup2(fd, target[role], inheritable=True)
        placed.add(target[role])
    if 0 not in placed:
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)
        os.close(null)
    keep = sorted(placed | {0, 1, 2})
    os.closerange(max(keep) + 1, 65536)
    for fd in range(3, max(keep)):
        if fd not in placed:
            try:
                os.close(fd)
            except OSError:
                pass


class _Worker:
    """What this process fixed at start: the state every run starts from, and its uid."""

    baseline: worker_state.Baseline
    uid: int


def _read_spec(fd: int) -> dict:
    size = os.fstat(fd).st_size  # a sealed memfd: its size is the spec's
    data = os.pread(fd, size, 0)
    os.close(fd)
    if len(data) != size:
        raise OSError("the run's spec was cut short")
    return wire.loads(data[4:])["spec"]


def _child(message: dict, fds: list[int], run_dir: str, zygote_pid: int) -> int:
    _libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    if os.getppid() != zygote_pid:
        return 122
    os.setsid()
    roles = list(message["fd_roles"])
    spec_fd = fds.pop(roles.index("spec"))
    roles.remove("spec")
    run_spec = _read_spec(spec_fd)
    _place_fds(fds, roles)
    for sig in (signal.SIGTERM, signal.SIGCHLD):
        signal.signal(sig, signal.SIG_DFL)
    os.chdir(run_dir)
    os.environ["HOME"] = os.environ["TMPDIR"] = run_dir
    cpu = int(message.get("cpu_s") or 0)
    if cpu > 0:
        resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 1))
    spec = dict(run_spec, channel_fd=FD_CHANNEL, report_fd=FD_REPORT)
    runtime = message["runtime"]
    if runtime.startswith("python-") and run_spec.get("sys_path"):
        _prepend_sys_path([str(p) for p in run_spec["sys_path"]])
    if run_spec.get("node_path"):
        os.environ["NODE_PATH"] = str(run_spec["node_path"])
    if runtime == "python-candidate":
        return candidate_side.main(spec)
    if runtime == "python-test":
        if spec.get("kind") == "pytest":  # a suite run by real pytest (its own module: several report frames)
            return pytest_side.main(spec)
        return test_side.main(spec)
    if runtime in ("node-candidate", "node-test"):
        path = os.path.join(run_dir, ".spec.json")
        with open(path, "w") as fh:
            json.dump(spec, fh)
        script = os.path.join(HERE, "candidate_side.js" if runtime == "node-candidate" else "test_side.js")
        node = message["node"]
        os.execv(node, [node, "--stack-size=4000", script, path])
    return 123


def _prepend_sys_path(dirs: list[str]) -> None:
    """Put the task's environment (read-only site-packages directories, mounted by the host) first
    on this run's ``sys.path``, and read their ``.pth`` files as a site directory's are. Only the
    forked run does this: the worker itself never imports anything of an environment."""
    sys.path[:0] = [d for d in dirs if d not in sys.path]
    for d in dirs:
        try:
            has_pth = any(name.endswith(".pth") for name in os.listdir(d))
        except OSError:
            continue
        if has_pth:
            import site

            site.addsitedir(d)


def _tampering(before_fork: bool = False) -> list[str]:
    """What differs from the start. Before a fork, every attribute but the open descriptors (the host
    has just handed some over); after a run, those too, and any System V object of this uid (none can
    be made under the filter, so one is tampering; the host removes it with the worker)."""
    if before_fork:  # before a fork: what another process could have changed since the last run
        return _Worker.baseline.changes(with_fds=False)
    found = _Worker.baseline.changes(with_fds=True)
    left = worker_state.sysv_objects(_Worker.uid)
    if left:
        found.append(f"System V IPC objects left behind: {sorted(left)}")
    return found


def _run(sock: socket.socket, message: dict, fds: list[int], work: str, scratch: list[str]) -> bool:
    """One run; False when this worker must not be used again (it was found changed)."""
    before = _tampering(before_fork=True)
    if before:
        for fd in fds:
            os.close(fd)
        _send(sock, {"op": "refused", "tampered": before})
        return False
    run_dir = os.path.join(work, "run")
    os.mkdir(run_dir, 0o700)
    me = os.getpid()
    used_before = resource.getrusage(resource.RUSAGE_CHILDREN)
    pid = os.fork()
    if pid == 0:
        code = 124
        try:
            code = _child(message, fds, run_dir, me)
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else 1
        except BaseException:  # noqa: BLE001 - a crash of the runtime itself
            import traceback
            traceback.print_exc()
            code = 125
        finally:
            try:
                sys.stdout.flush()
                sys.stderr.flush()
            except BaseException:  # noqa: BLE001
                pass
            os._exit(code)
    for fd in fds:
        os.close(fd)
    pidfd = os.pidfd_open(pid)
    poller = select.poll()
    poller.register(sock.fileno(), select.POLLIN)
    poller.register(pidfd, select.POLLIN)
    status = None
    rusage: Any = None  # set by wait4 below before it is read
    requested_kill = False
    run_delay = None
    while status is None:
        for fd, _event in poller.poll():
            if fd == pidfd:
                _, status, rusage = os.wait4(pid, 0)
                break
            incoming, extra = _recv(sock)
            for f in extra:
                os.close(f)
            if incoming is None:  # the host is gone: kill the run, leave nothing behind
                os.kill(pid, signal.SIGKILL)
                sweep()
                for place in scratch:
                    wipe(place)
                os._exit(0)
            if incoming.get("op") == "kill" and not requested_kill:
                requested_kill = True
                run_delay = worker_state.run_delay_s([pid, *descendants()])
                os.kill(pid, signal.SIGKILL)
    os.close(pidfd)
    swept = sweep()
    clean = all([wipe(place) for place in scratch])
    code = os.waitstatus_to_exitcode(status)
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    tampered = _tampering()
    _send(sock, {"op": "exited", "exit_code": code if code >= 0 else None, "signal": -code if code < 0 else None,
                 "swept": swept, "clean": clean, "requested_kill": requested_kill,
                 "cpu_s": round(rusage.ru_utime + rusage.ru_stime, 4), "maxrss_kb": rusage.ru_maxrss,
                 "cpu_total_s": round(used.ru_utime + used.ru_stime - used_before.ru_utime - used_before.ru_stime, 4),
                 "run_delay_s": None if run_delay is None else round(run_delay, 4), "tampered": tampered})
    return not tampered


def preload_pytest(paths: list[str]) -> None:
    """Import pytest and its built-in plugins from ``paths`` (the pinned, read-only copy), so a test
    run forks with pytest loaded instead of importing it (about 100 ms each time). Only pytest's own
    code runs: no test file, conftest, plugin of a task or candidate is read here. ``sys.path`` is
    put back; the run's process puts the copy on its own path again."""
    saved = list(sys.path)
    sys.path[:0] = paths
    try:
        import importlib

        import _pytest.config

        for name in ("pytest", "_pytest.assertion.rewrite", "_pytest._io.terminalwriter", "_pytest.python_api",
                     *(f"_pytest.{p}" for p in _pytest.config.default_plugins)):
            try:
                importlib.import_module(name)
            except Exception:  # noqa: BLE001 - a plugin this pytest lacks: the run imports what it needs
                pass
    except Exception:  # noqa: BLE001 - no usable pytest there: every run reports that itself
        pass
    finally:
        sys.path[:] = saved


def main() -> int:
    fd, scratch = int(sys.argv[1]), [p for p in sys.argv[2].split(":") if p]
    work = scratch[0]
    _libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
    _libc.prctl(PR_SET_DUMPABLE, 0, 0, 0, 0)
    sock = socket.socket(fileno=fd)
    for name in PRELOAD:
        try:
            __import__(name)
        except Exception:  # noqa: BLE001 - a missing optional module only costs speed
            pass
    if len(sys.argv) > 3:
        preload_pytest([p for p in sys.argv[3].split(":") if p])
    os.chdir(work)
    scratch = [p for p in scratch if os.path.isdir(p) and os.access(p, os.W_OK)]
    for place in scratch:
        wipe(place)
    _Worker.uid = os.getuid()
    worker_state.remove_sysv(worker_state.sysv_objects(_Worker.uid))
    # The per-run filter goes on this process once, before its first fork: every run inherits it
    # (attaching a filter costs the kernel a pass over every syscall number; once per worker, not per
    # run). This process needs none of what it refuses.
    bpf.Prepared(bpf.run_filter(bpf.machine(), worker_state.ancestors())).apply()
    _Worker.baseline = worker_state.Baseline()
    # Everything this process holds now lives as long as it does: keep it out of the cyclic collector.
    # Why: a run's process inherits the collector's counters, and a collection there walks every object
    # it inherited, writing to (and so copying) every page that holds one; frozen, none is walked. The
    # run's own objects are collected as usual.
    gc.collect()
    gc.freeze()
    _send(sock, {"op": "ready", "pid": os.getpid(), "python": sys.version.split()[0]})
    while True:
        message, fds = _recv(sock)
        if message is None:
            return 0
        if message.get("op") == "run":
            if not _run(sock, message, fds, work, scratch):
                return 0  # found changed: never fork from this process again
        else:
            for f in fds:
                os.close(f)


if __name__ == "__main__":
    sys.exit(main())
