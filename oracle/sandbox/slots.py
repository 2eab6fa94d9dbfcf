"""Worker slots: one dedicated unprivileged uid per concurrent sandbox run.

Why not ``nobody``: every job running as the same uid can signal, ptrace or read the /proc entries
of every other job. A dedicated uid per slot keeps concurrent runs apart, and makes RLIMIT_NPROC a
per-run limit. Slots are claimed with ``flock`` on a file per uid, so several oracle processes on one
machine (pytest workers, batch shards) never hand out the same uid at the same time. The same
locks tell ``sweep_leftovers`` what a killed oracle left behind: a slot whose lock is free has no
live owner, so its processes and temp dirs can go.
"""

from __future__ import annotations

import fcntl
import itertools
import os
import re
import shutil
import signal
import threading
import time
from dataclasses import dataclass
from typing import Callable, Iterator
from pathlib import Path

UID_BASE = 61000
"""First uid of the slot range; uids UID_BASE .. UID_BASE + SLOT_COUNT - 1 belong to the sandbox."""
SLOT_COUNT = 256
LOCK_DIR = Path("/run/oracle-sandbox/slots") if os.geteuid() == 0 else None

_local_lock = threading.Lock()
_held: set[int] = set()
_claims = itertools.count()


@dataclass
class Slot:
    """A claimed uid (and gid); release it when the run's processes are gone."""

    uid: int
    _fd: int | None = None

    def release(self) -> None:
        with _local_lock:
            _held.discard(self.uid)
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None


def can_drop_privileges() -> bool:
    """Only root (CAP_SETUID) can switch to a slot uid; otherwise runs keep the caller's uid."""
    return os.geteuid() == 0


def claim_slot() -> Slot | None:
    """Claim a free slot uid, or None when not running as root (no uid to switch to)."""
    if not can_drop_privileges():
        return None
    assert LOCK_DIR is not None
    LOCK_DIR.mkdir(parents=True, exist_ok=True, mode=0o700)
    # Rotate through the range: a run's killed processes may linger as zombies until init reaps
    # them, and they still count against RLIMIT_NPROC of their uid. Reusing the uid at once would
    # fail the next run's clone() with EAGAIN (seen right after a fork bomb).
    start = (os.getpid() + next(_claims)) % SLOT_COUNT
    for i in range(SLOT_COUNT):
        uid = UID_BASE + (start + i) % SLOT_COUNT
        fd = _try_lock(uid)
        if fd is not None:
            return Slot(uid=uid, _fd=fd)
    raise RuntimeError("all sandbox uid slots are busy")


def _try_lock(uid: int) -> int | None:
    """The flock fd of ``uid``'s slot (marked held in this process), or None when it is taken."""
    assert LOCK_DIR is not None
    with _local_lock:
        if uid in _held:
            return None
        _held.add(uid)
    try:
        fd = os.open(LOCK_DIR / str(uid), os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    except OSError:
        with _local_lock:
            _held.discard(uid)
        raise
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        with _local_lock:
            _held.discard(uid)
        return None
    return fd


def _live_process_uids() -> Iterator[tuple[int, int]]:
    """(pid, real uid) of every live (non-zombie) process; a zombie runs nothing, its parent reaps it."""
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            with open(f"/proc/{entry.name}/status", "rb") as fh:
                for line in fh:
                    if line.startswith(b"State:") and line.split()[1] in (b"Z", b"X"):
                        break
                    if line.startswith(b"Uid:"):
                        yield int(entry.name), int(line.split()[1])
                        break
        except (FileNotFoundError, ProcessLookupError, PermissionError):
            continue


def processes_of_uid(uid: int) -> list[int]:
    """Live pids whose real uid is ``uid``; sweeps leftovers, and the attack tests use it."""
    return [pid for pid, u in _live_process_uids() if u == uid]


def kill_until_gone(find: Callable[[], list[int]], *, timeout_s: float, pause_s: float = 0.005) -> list[int]:
    """SIGKILL whatever ``find`` returns until it returns nothing or ``timeout_s`` passes.

    Used for a run's cgroup members and for leftovers of its slot uid; returns the pids signalled.
    """
    killed: list[int] = []
    end = time.monotonic() + timeout_s
    while True:
        found = find()
        if not found:
            return killed
        for pid in found:
            try:
                os.kill(pid, signal.SIGKILL)
                killed.append(pid)
            except ProcessLookupError:
                pass
        if time.monotonic() > end:
            return killed
        time.sleep(pause_s)


LEFTOVER_DIR = re.compile(r"^oracle-(?:run|worker)-(?:(\d+)|p(\d+))-")
"""Per-run and per-worker temp dirs: ``oracle-run-<slot uid>-*``, or ``oracle-run-p<owner pid>-*``
when no slot was claimed (not root). The name says which lock (or process) guards the dir."""


def _mount_points_under(path: str) -> list[str]:
    """Mount points at or below ``path`` in this mount namespace, deepest first."""
    found = []
    try:
        with open("/proc/self/mountinfo", "rb") as fh:
            for line in fh:
                point = line.split()[4].decode()
                point = re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), point)
                if point == path or point.startswith(path.rstrip("/") + "/"):
                    found.append(point)
    except OSError:
        return []
    return sorted(found, key=len, reverse=True)


def _remove_leftover_dir(path: str) -> None:
    from oracle.sandbox.confine import unmount  # ctypes; only needed here

    for point in _mount_points_under(path):  # a run's tmpfs work dir stays mounted after kill -9
        unmount(point)
    shutil.rmtree(path, ignore_errors=True)


def _slot_uid_processes() -> dict[int, list[int]]:
    """One /proc scan: live processes whose real uid is a slot uid, by uid."""
    found: dict[int, list[int]] = {}
    for pid, uid in _live_process_uids():
        if UID_BASE <= uid < UID_BASE + SLOT_COUNT:
            found.setdefault(uid, []).append(pid)
    return found


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def sweep_leftovers(tmp_dir: str) -> dict[str, int]:
    """Remove what a killed oracle process left behind: slot-uid processes and temp dirs.

    Only slots whose lock is free are touched: a live oracle process (this one included) holds
    the lock of every slot it uses for as long as anything of that run exists. Each swept slot's
    processes are killed, then its dirs unmounted and removed, while this sweep holds the lock.
    Dirs of lock-less runs (not root) go when the process named in them is gone.
    """
    by_uid: dict[int, list[str]] = {}
    by_pid: dict[int, list[str]] = {}
    try:
        entries = list(os.scandir(tmp_dir))
    except OSError:
        entries = []
    for entry in entries:
        m = LEFTOVER_DIR.match(entry.name)
        if m is None or not entry.is_dir(follow_symlinks=False):
            continue
        if m.group(1) is not None:
            by_uid.setdefault(int(m.group(1)), []).append(entry.path)
        else:
            by_pid.setdefault(int(m.group(2)), []).append(entry.path)
    swept = {"processes": 0, "dirs": 0}
    if can_drop_privileges():
        procs = _slot_uid_processes()
        for uid in sorted(u for u in set(by_uid) | set(procs) if UID_BASE <= u < UID_BASE + SLOT_COUNT):
            fd = _try_lock(uid)
            if fd is None:
                continue  # in use by a live oracle process
            try:
                if uid in procs:
                    swept["processes"] += len(set(kill_until_gone(
                        lambda: processes_of_uid(uid), timeout_s=2.0, pause_s=0.01)))
                for path in by_uid.get(uid, []):
                    _remove_leftover_dir(path)
                    swept["dirs"] += 1
            finally:
                with _local_lock:
                    _held.discard(uid)
                os.close(fd)
    for pid, paths in by_pid.items():
        if pid != os.getpid() and not _pid_alive(pid):
            for path in paths:
                _remove_leftover_dir(path)
                swept["dirs"] += 1
    return swept
