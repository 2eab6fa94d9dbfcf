"""Progress of many evaluations (``oracle batch``, ``oracle compare``, ``oracle evaluate`` on a JSONL
file), on stderr.

Three ways to show it, picked by the caller:

- ``bar``: a live bar on a terminal (done/total, rate, failures, elapsed, what runs now), drawn by
  the ``bar`` the caller hands in; the CLI's is rich's (oracle/cli/progress_bar.py);
- ``log``: a ``batch_progress`` structured log line every ``interval_s`` (CI, files, pipes);
- ``text``: a plain line every ``interval_s``, for a user who asked for progress off a terminal.

Progress never goes to stdout, which carries the results. The library draws no bar of its own and
imports no terminal package: a library caller without a ``bar`` gets ``log`` lines, which its own
logging configuration shows or not.
"""

from __future__ import annotations

import sys
import time
from typing import Any, Callable, Literal, Protocol, TextIO

from oracle._internal.log import get_logger

log = get_logger("oracle.batch")

Mode = Literal["bar", "log", "text", "off"]


class Bar(Protocol):
    """A live display of the counts, started by a ``BarFactory`` and stopped once."""

    def update(self, *, completed: int, rate_per_s: float, failed: int, running: str) -> None: ...

    def stop(self) -> None: ...


BarFactory = Callable[[TextIO, str, int, int], Bar]
"""(stream, label, total, completed so far) -> a started ``Bar``."""


class Progress:
    """Counts finished rows and shows them. On a terminal (``tty``, default: whether ``stream`` is
    one) with a ``bar`` factory, a live bar; otherwise ``off_tty`` (``log`` for batches, ``text`` or
    ``off`` for ``evaluate``)."""

    def __init__(self, total: int, *, skipped: int = 0, stream: TextIO | None = None,
                 interval_s: float = 5.0, tty: bool | None = None, off_tty: Mode = "log",
                 label: str = "batch", bar: BarFactory | None = None) -> None:
        self.total, self.skipped = total, skipped
        self.done = 0
        self.failed = 0
        self.label = label
        self.stream = stream or sys.stderr
        is_tty = _isatty(self.stream) if tty is None else tty
        self.mode: Mode = "bar" if is_tty and bar is not None else off_tty
        self.interval_s = interval_s
        self.started = time.monotonic()
        self._last = self.started
        self._shown = -1  # rows finished at the last line written (close() does not repeat it)
        self._bar: Bar | None = None
        if bar is not None and self.mode == "bar":
            self._bar = bar(self.stream, label, total, skipped)

    def __enter__(self) -> Progress:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def running(self, what: str) -> None:
        """Name what runs now (``evaluate`` shows the task id); only the bar shows it."""
        if self._bar is not None:
            self._bar.update(completed=self.skipped + self.done, rate_per_s=self._rate(time.monotonic()),
                             failed=self.failed, running=what)

    def update(self, row: dict[str, Any]) -> None:
        self.done += 1
        self.failed += row.get("status") in ("failed", "unparsed")
        now = time.monotonic()
        if self._bar is not None:
            self._bar.update(completed=self.skipped + self.done, rate_per_s=self._rate(now),
                             failed=self.failed, running="")
        elif now - self._last >= self.interval_s:
            self._last = now
            self._emit(now)

    def _rate(self, now: float) -> float:
        return self.done / max(now - self.started, 1e-9)

    def eta_s(self, now: float) -> float | None:
        """Seconds left at the rate so far (rows resumed from an earlier run do not count)."""
        rate = self._rate(now)
        return round((self.total - self.skipped - self.done) / rate, 1) if self.done and rate > 0 else None

    def _emit(self, now: float) -> None:
        finished = self._shown = self.skipped + self.done
        if self.mode == "log":
            log.info("batch_progress", done=finished, total=self.total, resumed=self.skipped,
                     rate_per_s=round(self._rate(now), 2), failed=self.failed, eta_s=self.eta_s(now))
        elif self.mode == "text":
            eta = self.eta_s(now)
            self.stream.write(f"{self.label}: {finished}/{self.total} done, {self._rate(now):.1f}/s, "
                              f"failed={self.failed}" + (f", eta {eta:.0f} s" if eta is not None else "") + "\n")
            self.stream.flush()

    def close(self) -> None:
        if self._bar is not None:
            bar, self._bar = self._bar, None
            self.mode = "off"
            bar.stop()
        elif self.mode != "off" and self._shown != self.skipped + self.done:
            self._emit(time.monotonic())
            self.mode = "off"


def _isatty(stream: TextIO) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):  # a closed or exotic stream
        return False
