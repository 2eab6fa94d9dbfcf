"""The ``exclusive`` marker (tests/plugins/exclusive.py) holds under two pytest-xdist workers: no
other test runs while an exclusive one does, and the other tests still run two at a time."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

SUITE = '''
import json, os, time
import pytest

def _record(name):
    start = time.monotonic()
    time.sleep(0.25)
    with open(os.environ["WINDOWS_LOG"], "a") as fh:
        fh.write(json.dumps([name, start, time.monotonic()]) + "\\n")

@pytest.mark.exclusive
@pytest.mark.parametrize("i", range(3))
def test_alone(i):
    _record(f"alone{i}")

@pytest.mark.parametrize("i", range(12))
def test_shared(i):
    _record(f"shared{i}")
'''


@pytest.mark.slow
def test_an_exclusive_test_overlaps_no_other_and_the_rest_still_run_in_parallel(tmp_path):
    (tmp_path / "test_windows.py").write_text(SUITE)
    log = tmp_path / "windows.jsonl"
    env = {**os.environ, "WINDOWS_LOG": str(log), "PYTHONPATH": str(ROOT)}
    env.pop("PYTEST_XDIST_WORKER", None)
    env.pop("PYTEST_XDIST_TESTRUNUID", None)
    plugins = ["-p", "tests.plugins.exclusive", "-p", "no:cacheprovider", "-p", "no:deepeval",
               "-p", "no:langsmith_plugin", "-p", "no:benchmark"]
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-n", "2", *plugins,
                           "-W", "ignore::pytest.PytestUnknownMarkWarning", "test_windows.py"],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    windows = [json.loads(line) for line in log.read_text().splitlines()]
    assert len(windows) == 15

    def overlap(a, b):
        return a[1] < b[2] and b[1] < a[2]

    alone = [w for w in windows if w[0].startswith("alone")]
    for a in alone:
        assert not [w[0] for w in windows if w is not a and overlap(a, w)], a
    shared = [w for w in windows if w[0].startswith("shared")]
    assert any(overlap(a, b) for i, a in enumerate(shared) for b in shared[i + 1:]), "no two tests ran at once"
