"""What the warm worker must still be after every run, and the kernel objects a run may leave.

Why: a run's process has the worker's uid, so whatever the kernel lets a process change in another
process of its uid (limits, priority, CPU affinity, scheduling policy) would carry into every later
run forked from this worker. The per-run seccomp filter (bpf.py) refuses those calls; this module is
the check behind it. ``Baseline`` records every attribute a fork hands down (``snapshot()`` names
them); the worker compares against it before each fork and after each run, and any difference
destroys the worker.

Kernel objects that outlive their process: System V shared memory, message queues and semaphore
sets (refused by the per-run filter; swept here by uid in case one appears anyway). POSIX message
queues are refused by the filter; files are emptied by the worker's wipe; processes by its sweep.
"""

from __future__ import annotations

import ctypes
import fcntl
import os
import resource

from .bpf import SYSCALLS, machine

_libc = ctypes.CDLL(None, use_errno=True)
_syscall = _libc.syscall
_syscall.restype = ctypes.c_long
PR_GET_DUMPABLE, PR_GET_TIMERSLACK = 3, 30
IPC_RMID = 0
SYSV = {"shm": _libc.shmctl, "msg": _libc.msgctl, "sem": _libc.semctl}
_RLIMITS = sorted((name, getattr(resource, name)) for name in dir(resource) if name.startswith("RLIMIT_"))
_RLIMIT_IDS = tuple(value for _name, value in _RLIMITS)


def _read(path: str) -> bytes:
    """The whole file, by raw descriptor calls (a /proc file: no buffered file object per read)."""
    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    try:
        chunks = []
        while chunk := os.read(fd, 65536):
            chunks.append(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)


def _ioprio() -> int:
    nr = SYSCALLS.get(machine(), {}).get("ioprio_get")
    return int(_syscall(ctypes.c_long(nr), ctypes.c_int(1), ctypes.c_int(0))) if nr else -1


def _umask() -> int:
    mask = os.umask(0o077)
    os.umask(mask)
    return mask


_READERS = (
    ("nice", lambda: os.getpriority(os.PRIO_PROCESS, 0)),
    ("cpu_affinity", lambda: sorted(os.sched_getaffinity(0))),
    ("scheduler", lambda: os.sched_getscheduler(0)),
    ("sched_priority", lambda: os.sched_getparam(0).sched_priority),
    ("io_priority", _ioprio),
    ("umask", _umask),
    ("dumpable", lambda: _libc.prctl(PR_GET_DUMPABLE, 0, 0, 0, 0)),
    ("timer_slack", lambda: _libc.prctl(PR_GET_TIMERSLACK, 0, 0, 0, 0)),
    ("ids", lambda: (os.getresuid(), os.getresgid(), os.getgroups())),
    ("process_group", lambda: (os.getpgid(0), os.getsid(0))),
    ("cwd", os.getcwd),
)
NAMES = tuple(name for name, _value in _RLIMITS) + tuple(name for name, _reader in _READERS)
"""What ``attributes()`` holds, in order: every attribute a forked run inherits or a run could change."""


def attributes() -> tuple:
    """The values of ``NAMES``, as one tuple: what the worker compares before each fork and after each
    run (no names, no dict: the check runs twice per run and side)."""
    return (*map(resource.getrlimit, _RLIMIT_IDS), *[read() for _name, read in _READERS])


def _open_fds(ignore: frozenset[int]) -> list[int]:
    found = []
    for name in os.listdir("/proc/self/fd"):
        fd = int(name)
        if fd in ignore:
            continue
        try:
            fcntl.fcntl(fd, fcntl.F_GETFD)  # the directory listing's own descriptor is closed by now
        except OSError:
            continue
        found.append(fd)
    return found


def _fd_count() -> int:
    """How many descriptors are open (Linux 6.2+ reports it as the size of /proc/self/fd; 0 before)."""
    return os.stat("/proc/self/fd").st_size


def snapshot(ignore_fds: frozenset[int] | None = frozenset()) -> dict[str, object]:
    """Every attribute of this process that a forked run inherits or that a run could change, by name;
    ``ignore_fds``: descriptors the host just handed over for the next run (None: leave the open
    descriptors out, which no other process can change)."""
    state: dict[str, object] = dict(zip(NAMES, attributes()))
    if ignore_fds is not None:
        state["open_fds"] = _open_fds(ignore_fds)
    return state


class Baseline:
    """The state this process started with, and the check against it.

    Why a class: the check runs before every fork and after every run, on both sides of a run, so the
    common answer (nothing changed) must be cheap. It compares ``attributes()`` with the start as one
    tuple, and the open descriptors exactly without listing them (each one it started with is still
    open, and the kernel counts no other); only on a difference does it build the named comparison
    for the report, and a difference that vanishes there (the descriptors, listed) is none.
    """

    def __init__(self) -> None:
        self.attributes = attributes()
        self.fds = _open_fds(frozenset())
        count = _fd_count()
        self._count = count if count == len(self.fds) else None  # None: this kernel does not count
        self.snapshot: dict[str, object] = dict(zip(NAMES, self.attributes), open_fds=self.fds)

    def _same_fds(self) -> bool:
        if self._count is None:
            return _open_fds(frozenset()) == self.fds
        if _fd_count() != self._count:
            return False
        try:
            for fd in self.fds:
                fcntl.fcntl(fd, fcntl.F_GETFD)
        except OSError:
            return False
        return True

    def changes(self, *, with_fds: bool) -> list[str]:
        """What differs from the start, one line each; ``with_fds`` False leaves the open descriptors
        out (before a fork: the host has just handed some over)."""
        now = attributes()
        if now == self.attributes and (not with_fds or self._same_fds()):
            return []
        current: dict[str, object] = dict(zip(NAMES, now))
        before = dict(self.snapshot)
        if with_fds:
            current["open_fds"] = _open_fds(frozenset())
        else:
            before.pop("open_fds")
        return changes(before, current)


def changes(before: dict[str, object], now: dict[str, object]) -> list[str]:
    """What differs, one line each (``RLIMIT_CPU: (8, 9) -> (1, 1)``)."""
    return [f"{key}: {before.get(key)!r} -> {now.get(key)!r}" for key in sorted(set(before) | set(now))
            if before.get(key) != now.get(key)]


def sysv_objects(uid: int) -> list[tuple[str, int]]:
    """(kind, id) of every System V IPC object this uid owns or created, as /proc/sysvipc lists them."""
    found: list[tuple[str, int]] = []
    for kind in SYSV:
        try:
            header, _, body = _read(f"/proc/sysvipc/{kind}").partition(b"\n")
        except OSError:
            continue
        if not body.strip():
            continue  # the common case: only the header
        columns = header.split()
        try:
            at_id, at_uid, at_cuid = columns.index(b"shmid" if kind == "shm" else b"msqid" if kind == "msg"
                                                   else b"semid"), columns.index(b"uid"), columns.index(b"cuid")
        except ValueError:
            continue
        for row in (line.split() for line in body.splitlines()):
            try:
                if int(row[at_uid]) == uid or int(row[at_cuid]) == uid:
                    found.append((kind, int(row[at_id])))
            except (IndexError, ValueError):
                continue
    return found


def remove_sysv(objects: list[tuple[str, int]]) -> int:
    """IPC_RMID each object; the number removed."""
    removed = 0
    for kind, ident in objects:
        rc = SYSV[kind](ctypes.c_int(ident), ctypes.c_int(0), ctypes.c_int(IPC_RMID), None) if kind == "sem" \
            else SYSV[kind](ctypes.c_int(ident), ctypes.c_int(IPC_RMID), None)
        removed += rc == 0
    return removed


def ancestors() -> list[int]:
    """This process and every ancestor it can see (pid namespaces hide the rest), with their process
    groups negated: what no run's signal may reach."""
    pids, pid = [], os.getpid()
    while pid > 0 and pid not in pids:
        pids.append(pid)
        try:
            with open(f"/proc/{pid}/stat", "rb") as fh:
                pid = int(fh.read().rsplit(b")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            break
    groups = set()
    for p in pids:
        try:
            groups.add(-os.getpgid(p))
        except OSError:
            pass
    return pids + sorted(groups)


def run_delay_s(pids: list[int]) -> float:
    """Seconds the threads of ``pids`` have waited, runnable, for a CPU (/proc/<pid>/task/*/schedstat);
    what tells a run starved by others from a run that sleeps or spins."""
    total = 0
    for pid in pids:
        try:
            tids = os.listdir(f"/proc/{pid}/task")
        except OSError:
            continue
        for tid in tids:
            try:
                with open(f"/proc/{pid}/task/{tid}/schedstat", "rb") as fh:
                    total += int(fh.read().split()[1])
            except (OSError, ValueError, IndexError):
                continue
    return total / 1e9
