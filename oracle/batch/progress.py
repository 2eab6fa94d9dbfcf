"""Progress: a bar on a terminal, periodic structured log lines otherwise (CI, files, pipes)."""

from __future__ import annotations

import sys
import time
from typing import Any, TextIO

import structlog

log = structlog.get_logger("oracle.batch")


class Progress:
    def __init__(self, total: int, *, skipped: int = 0, stream: TextIO | None = None,
                 interval_s: float = 5.0, tty: bool | None = None) -> None:
        self.total, self.skipped = total, skipped
        self.done = 0
        self.failed = 0
        self.stream = stream or sys.stderr
        self.tty = self.stream.isatty() if tty is None else tty
        self.interval_s = interval_s if not self.tty else 0.1
        self.started = time.monotonic()
        self._last = 0.0

    def update(self, row: dict[str, Any]) -> None:
        self.done += 1
        self.failed += row.get("status") in ("failed", "unparsed")
        now = time.monotonic()
        if now - self._last >= self.interval_s:
            self._last = now
            self._emit(now)

    def _emit(self, now: float) -> None:
        finished = self.skipped + self.done
        rate = self.done / max(now - self.started, 1e-9)
        if self.tty:
            width = 30
            frac = finished / self.total if self.total else 1.0
            bar = "#" * int(frac * width) + "-" * (width - int(frac * width))
            self.stream.write(f"\r[{bar}] {finished}/{self.total} {rate:6.1f}/s failed={self.failed}")
            self.stream.flush()
        else:
            log.info("batch_progress", done=finished, total=self.total, resumed=self.skipped,
                     rate_per_s=round(rate, 2), failed=self.failed)

    def close(self) -> None:
        self._emit(time.monotonic())
        if self.tty:
            self.stream.write("\n")
            self.stream.flush()
