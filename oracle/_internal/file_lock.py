"""An exclusive ``flock`` on a file, for caches that several processes build into at once.

The kernel releases the lock when its holder dies, so a crashed builder never blocks the next
one; a waiter gives up after ``timeout_s`` with the caller's own error (the caller knows which
field or setting to name).
"""

from __future__ import annotations

import fcntl
import os
import time
from pathlib import Path
from typing import Callable


class FileLock:
    """``with FileLock(path, timeout_s, on_timeout):`` holds the lock; ``on_timeout(path, timeout_s)``
    makes the exception raised when another holder kept it longer than ``timeout_s``."""

    def __init__(self, path: Path, timeout_s: float, on_timeout: Callable[[Path, float], Exception],
                 poll_s: float = 0.05) -> None:
        self.path, self.timeout_s, self.on_timeout, self.poll_s = path, timeout_s, on_timeout, poll_s
        self.fd: int | None = None

    def __enter__(self) -> "FileLock":
        self.fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        deadline = time.monotonic() + self.timeout_s
        while True:
            try:
                fcntl.flock(self.fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                return self
            except BlockingIOError:
                if time.monotonic() > deadline:
                    os.close(self.fd)
                    self.fd = None
                    raise self.on_timeout(self.path, self.timeout_s) from None
                time.sleep(self.poll_s)

    def __exit__(self, *exc: object) -> None:
        if self.fd is not None:
            fcntl.flock(self.fd, fcntl.LOCK_UN)
            os.close(self.fd)
            self.fd = None
