"""What happens to a run when the oracle process itself dies (kill -9): nothing it started survives.

Each test starts a real oracle process (a python subprocess using Sandbox), kills it with SIGKILL
while a sandboxed program sleeps, and looks at the host's process table.
"""

from __future__ import annotations

import os
import secrets
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from strategies.verifier.sandbox import probe

pytestmark = pytest.mark.sandbox

PYTHON = "/usr/bin/python3"
BACKENDS = [b for b in ("nsjail", "bubblewrap", "landlock") if b in probe().available]
REPO = str(Path(__file__).resolve().parent.parent)

ORACLE = """
import asyncio, sys
from strategies.verifier.sandbox import RunRequest, Sandbox, SandboxLimits
backend, marker = sys.argv[1], sys.argv[2]
sandbox = Sandbox(backend=backend, limits=SandboxLimits(timeout_s=60))
code = "import time\\nprint('started', flush=True)\\ntime.sleep(60)\\n# " + marker + "-in-the-sandbox"
asyncio.run(sandbox.run(RunRequest(command=[%r, "-I", "-c", code], timeout_s=60)))
""" % PYTHON


def _live_pids_with(needle: str, exclude: set[int]) -> list[int]:
    """Non-zombie processes whose command line contains ``needle``."""
    found = []
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit() or int(entry.name) in exclude:
            continue
        try:
            cmdline = Path(f"/proc/{entry.name}/cmdline").read_bytes()
            state = Path(f"/proc/{entry.name}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if needle.encode() in cmdline and state not in ("Z", "X"):
            found.append(int(entry.name))
    return found


def _wait_for(predicate, timeout_s: float, pause_s: float = 0.05):
    end = time.monotonic() + timeout_s
    while time.monotonic() < end:
        value = predicate()
        if value:
            return value
        time.sleep(pause_s)
    return predicate()


def start_oracle(backend: str) -> tuple[subprocess.Popen, str]:
    marker = f"oracle-lifecycle-{secrets.token_hex(6)}"
    oracle = subprocess.Popen([sys.executable, "-c", ORACLE, backend, marker], cwd=REPO,
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    needle = f"{marker}-in-the-sandbox"
    if not _wait_for(lambda: _live_pids_with(needle, {oracle.pid}), 30):
        oracle.kill()
        pytest.fail(f"the sandboxed program never started: {oracle.communicate()[1][-2000:]!r}")
    return oracle, needle


@pytest.fixture(params=BACKENDS)
def backend(request) -> str:
    return request.param


def test_sandboxed_processes_die_with_a_killed_oracle(backend):
    oracle, needle = start_oracle(backend)
    running = _live_pids_with(needle, {oracle.pid})
    assert running
    os.kill(oracle.pid, signal.SIGKILL)
    oracle.wait()
    left = _wait_for(lambda: not _live_pids_with(needle, set()), 5)
    survivors = _live_pids_with(needle, set())
    for pid in survivors:  # do not leave them behind for the next test
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    assert left and not survivors, f"{backend}: {survivors} outlived the killed oracle"
