"""The live progress bar of ``oracle batch``, ``oracle compare`` and ``oracle evaluate``, drawn by rich.

The library counts (oracle/batch/progress.py) and draws nothing; this is the ``Bar`` the CLI hands
it. rich is imported only when a bar is started, that is on a terminal.
"""

from __future__ import annotations

from typing import Any, TextIO

from oracle.batch.progress import BarFactory


class RichBar:
    """done/total, rate, failures, elapsed, eta and what runs now, redrawn four times a second."""

    def __init__(self, stream: TextIO, label: str, total: int, completed: int, *,
                 share_stdout: bool = False) -> None:
        from rich.console import Console
        from rich.progress import (BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn,
                                   TimeRemainingColumn)

        console = Console(file=stream, force_terminal=True)
        # share_stdout: stdout is the same screen, so results printed meanwhile are drawn above the bar
        # by rich instead of being overwritten by it.
        self._progress: Any = Progress(
            TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
            TextColumn("{task.fields[rate]:.1f}/s failed={task.fields[failed]}"),
            TimeElapsedColumn(), TextColumn("eta"), TimeRemainingColumn(), TextColumn("{task.fields[now]}"),
            console=console, refresh_per_second=4, redirect_stdout=share_stdout, redirect_stderr=False)
        self._task = self._progress.add_task(label, total=total, completed=completed, rate=0.0, failed=0, now="")
        self._progress.start()

    def update(self, *, completed: int, rate_per_s: float, failed: int, running: str) -> None:
        self._progress.update(self._task, completed=completed, rate=rate_per_s, failed=failed, now=running)

    def stop(self) -> None:
        self._progress.stop()


def rich_bar(*, share_stdout: bool = False) -> BarFactory:
    """A ``BarFactory`` for ``Progress`` (``share_stdout``: results go to the same terminal)."""

    def start(stream: TextIO, label: str, total: int, completed: int) -> RichBar:
        return RichBar(stream, label, total, completed, share_stdout=share_stdout)

    return start
