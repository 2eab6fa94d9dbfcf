"""One writer per batch output: an exclusive lock held for the whole run.

Why: two ``oracle batch`` runs appending to the same output each computed every line and wrote
its own rows (400 rows for 200 inputs), and both then failed their own row count. The lock is an
``flock`` on a sidecar file ``<output>.lock``, taken without waiting: the second run stops at once
with exit 2 and a message naming the holder (pid, host, start time, input), read from the file.

Why a sidecar and not the output itself: the resume step rewrites the output through a
temporary file and ``os.replace``, which would silently drop a lock held on the old inode. The
kernel releases an ``flock`` when its process dies, so a crashed run never leaves a stale lock;
the sidecar file stays behind (deleting it would open a race) and is harmless.
"""

from __future__ import annotations

import fcntl
import json
import os
import socket
import time
from pathlib import Path
from typing import IO, Any

from oracle.errors import OutputLocked


def lock_path(output: str | Path) -> Path:
    output = Path(output)
    return output.with_name(output.name + ".lock")


class OutputLock:
    """``with OutputLock(output, input_path=...)``: held until the block ends or the process dies."""

    def __init__(self, output: str | Path, *, input_path: str | Path | None = None) -> None:
        self.output = Path(output)
        self.path = lock_path(output)
        self.input_path = str(input_path) if input_path is not None else None
        self._fh: IO[str] | None = None

    def acquire(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fh = self.path.open("a+", encoding="utf-8")
        try:
            fcntl.flock(fh.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = _describe(_read_holder(fh))
            fh.close()
            raise OutputLocked(f"{self.output} is being written by another oracle batch ({holder}); "
                               f"wait for it to finish, or write to another --output") from None
        fh.seek(0)
        fh.truncate()
        fh.write(json.dumps({"pid": os.getpid(), "host": socket.gethostname(), "started_at": time.time(),
                             "input": self.input_path}) + "\n")
        fh.flush()
        self._fh = fh

    def release(self) -> None:
        if self._fh is not None:
            fcntl.flock(self._fh.fileno(), fcntl.LOCK_UN)
            self._fh.close()
            self._fh = None

    def __enter__(self) -> "OutputLock":
        self.acquire()
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()


def _read_holder(fh: IO[str]) -> dict[str, Any]:
    try:
        fh.seek(0)
        data = json.loads(fh.read() or "{}")
        return data if isinstance(data, dict) else {}
    except (OSError, ValueError):
        return {}


def _describe(holder: dict[str, Any]) -> str:
    if not holder:
        return "holder unknown"
    started = holder.get("started_at")
    since = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(started)) if isinstance(started, (int, float)) else "?"
    return f"pid {holder.get('pid')} on {holder.get('host')}, since {since}, input {holder.get('input')}"
