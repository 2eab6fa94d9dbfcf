"""Worker slots: one dedicated unprivileged uid per concurrent sandbox run.

Why not ``nobody``: every job running as the same uid can signal, ptrace or read the /proc entries
of every other job. A dedicated uid per slot keeps concurrent runs apart, and makes RLIMIT_NPROC a
per-run limit. Slots are claimed with ``flock`` on a file per uid, so several oracle processes on one
machine (pytest workers, batch shards) never hand out the same uid at the same time.
"""

from __future__ import annotations

import fcntl
import itertools
import os
import signal
import threading
import time
from dataclasses import dataclass
from typing import Callable
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
        with _local_lock:
            if uid in _held:
                continue
            _held.add(uid)
        fd = os.open(LOCK_DIR / str(uid), os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            with _local_lock:
                _held.discard(uid)
            continue
        return Slot(uid=uid, _fd=fd)
    raise RuntimeError("all sandbox uid slots are busy")


def processes_of_uid(uid: int) -> list[int]:
    """Live (non-zombie) pids whose real uid is ``uid``; sweeps leftovers, and the attack tests use it."""
    found = []
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            with open(f"/proc/{entry.name}/status", "rb") as fh:
                for line in fh:
                    if line.startswith(b"State:") and line.split()[1] in (b"Z", b"X"):
                        break  # a zombie runs nothing; its parent (or init) reaps it
                    if line.startswith(b"Uid:"):
                        if int(line.split()[1]) == uid:
                            found.append(int(entry.name))
                        break
        except (FileNotFoundError, ProcessLookupError, PermissionError):
            continue
    return found


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
