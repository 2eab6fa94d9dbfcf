"""What the warm worker must still be after every run, and the kernel objects a run may leave.

Why: a run's process has the worker's uid, so whatever the kernel lets a process change in another
process of its uid (limits, priority, CPU affinity, scheduling policy) would carry into every later
run forked from this worker. The per-run seccomp filter (bpf.py) refuses those calls; this module is
the check behind it. ``snapshot()`` records every attribute a fork hands down; the worker compares it
before each fork and after each run, and any difference destroys the worker.

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


def _ioprio() -> int:
    nr = SYSCALLS.get(machine(), {}).get("ioprio_get")
    return int(_syscall(ctypes.c_long(nr), ctypes.c_int(1), ctypes.c_int(0))) if nr else -1


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


def snapshot(ignore_fds: frozenset[int] | None = frozenset()) -> dict[str, object]:
    """Every attribute of this process that a forked run inherits or that a run could change;
    ``ignore_fds``: descriptors the host just handed over for the next run (None: leave the open
    descriptors out, which no other process can change)."""
    state: dict[str, object] = {name: resource.getrlimit(value) for name, value in _RLIMITS}
    mask = os.umask(0o077)
    os.umask(mask)
    state.update({
        "nice": os.getpriority(os.PRIO_PROCESS, 0),
        "cpu_affinity": sorted(os.sched_getaffinity(0)),
        "scheduler": os.sched_getscheduler(0),
        "sched_priority": os.sched_getparam(0).sched_priority,
        "io_priority": _ioprio(),
        "umask": mask,
        "dumpable": _libc.prctl(PR_GET_DUMPABLE, 0, 0, 0, 0),
        "timer_slack": _libc.prctl(PR_GET_TIMERSLACK, 0, 0, 0, 0),
        "ids": (os.getresuid(), os.getresgid(), os.getgroups()),
        "process_group": (os.getpgid(0), os.getsid(0)),
        "cwd": os.getcwd(),
    })
    if ignore_fds is not None:
        state["open_fds"] = _open_fds(ignore_fds)
    return state


def changes(before: dict[str, object], now: dict[str, object]) -> list[str]:
    """What differs, one line each (``RLIMIT_CPU: (8, 9) -> (1, 1)``)."""
    return [f"{key}: {before.get(key)!r} -> {now.get(key)!r}" for key in sorted(set(before) | set(now))
            if before.get(key) != now.get(key)]


def sysv_objects(uid: int) -> list[tuple[str, int]]:
    """(kind, id) of every System V IPC object this uid owns or created, as /proc/sysvipc lists them."""
    found: list[tuple[str, int]] = []
    for kind in SYSV:
        try:
            with open(f"/proc/sysvipc/{kind}", "rb") as fh:
                header = fh.readline().split()
                rows = [line.split() for line in fh]
        except OSError:
            continue
        try:
            at_id, at_uid, at_cuid = header.index(b"shmid" if kind == "shm" else b"msqid" if kind == "msg"
                                                  else b"semid"), header.index(b"uid"), header.index(b"cuid")
        except ValueError:
            continue
        for row in rows:
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
