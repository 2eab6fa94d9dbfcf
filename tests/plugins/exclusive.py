"""Tests marked ``exclusive`` run alone, even on two pytest-xdist workers.

A few tests load the whole machine on purpose (host processes spinning on every core, to prove a
starved run is rerun rather than failed) or judge a run by the CPU it got. Beside another worker's
tests they would starve those, or be starved by them: either way a verdict about the machine, not
the code. Every test takes a shared lock on one file per run; an exclusive test takes it alone. A
second lock (the gate) is taken before either, so a waiting exclusive test stops new shared ones
from getting in ahead of it. Without xdist nothing is locked.
"""

from __future__ import annotations

import fcntl
import os
import tempfile
from pathlib import Path

import pytest


def _lock_paths() -> tuple[Path, Path] | None:
    run = os.environ.get("PYTEST_XDIST_TESTRUNUID")
    if not run or not os.environ.get("PYTEST_XDIST_WORKER"):
        return None
    base = Path(tempfile.gettempdir()) / f"oracle-tests-{run}"
    return base.with_suffix(".gate"), base.with_suffix(".lock")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    paths = _lock_paths()
    if paths is None:
        yield
        return
    mode = fcntl.LOCK_EX if item.get_closest_marker("exclusive") else fcntl.LOCK_SH
    gate = os.open(paths[0], os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    lock = os.open(paths[1], os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    try:
        fcntl.flock(gate, fcntl.LOCK_EX)
        try:
            fcntl.flock(lock, mode)
        finally:
            fcntl.flock(gate, fcntl.LOCK_UN)
        yield
    finally:
        os.close(lock)  # closing drops the lock
        os.close(gate)
