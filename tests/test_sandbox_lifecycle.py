"""What happens to a run when the oracle process itself dies (kill -9): nothing it started survives.

Each test starts a real oracle process (a python subprocess using Sandbox), kills it with SIGKILL
while a sandboxed program sleeps (with a daemon it forked), and looks at the host: the process
table, the temp dirs, the mounts. The next Sandbox created by any process sweeps what is left.
"""

from __future__ import annotations

import os
import secrets
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from oracle.sandbox import slots
from oracle.sandbox.slots import processes_of_uid
from tests.plugins.sandbox_backends import CONTAINMENT_BACKENDS, use_backend

pytestmark = pytest.mark.sandbox

PYTHON = "/usr/bin/python3"
REPO = str(Path(__file__).resolve().parent.parent)

# The sandboxed program forks a daemon (new session): PDEATHSIG is not inherited by it, so on the
# Landlock backend (no pid namespace) only the sweep catches it.
PROGRAM = r"""import os, time
if os.fork() == 0:
    os.setsid()
    time.sleep(60)
    os._exit(0)
time.sleep(60)
# MARKER-in-the-sandbox
"""
ORACLE = """
import asyncio, sys
from oracle.sandbox import RunRequest, Sandbox, SandboxLimits
backend, code = sys.argv[1], sys.argv[2]
sandbox = Sandbox(backend=backend, limits=SandboxLimits(timeout_s=60))
asyncio.run(sandbox.run(RunRequest(command=[%r, "-I", "-c", code], timeout_s=60)))
""" % PYTHON
SWEEP = """
import sys
from oracle.sandbox import Sandbox
Sandbox(backend=sys.argv[1])
"""


def _stat_fields(pid: int) -> list[str]:
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()


def _live_pids_with(needle: str, exclude: set[int]) -> list[int]:
    """Non-zombie processes whose command line contains ``needle``."""
    found = []
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit() or int(entry.name) in exclude:
            continue
        try:
            cmdline = Path(f"/proc/{entry.name}/cmdline").read_bytes()
            state = _stat_fields(int(entry.name))[0]
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


def _uid_of(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("Uid:"):
            return int(line.split()[1])
    raise AssertionError("no Uid line")


def _kill_all(pids: list[int]) -> None:
    for pid in pids:  # never leave them behind for the next test
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def _alive(pid: int) -> bool:
    try:
        return _stat_fields(pid)[0] not in ("Z", "X")
    except OSError:
        return False


def _mounted_under(path: str) -> bool:
    return any(line.split()[4].startswith(path)
               for line in Path("/proc/self/mountinfo").read_text().splitlines())


def start_oracle(backend: str) -> tuple[subprocess.Popen, str, int]:
    """The oracle process, the marker its program carries, and the program's pid (not a wrapper's)."""
    needle = f"oracle-lifecycle-{secrets.token_hex(6)}"
    code = PROGRAM.replace("MARKER", needle)
    oracle = subprocess.Popen([sys.executable, "-c", ORACLE, backend, code], cwd=REPO,
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)

    def runs_python(pid: int) -> bool:
        try:
            return Path(f"/proc/{pid}/cmdline").read_bytes().startswith(PYTHON.encode())
        except OSError:  # ended since it was listed
            return False

    def programs() -> list[int]:
        return [p for p in _live_pids_with(needle, {oracle.pid}) if runs_python(p)]

    if len(_wait_for(lambda: len(programs()) >= 2 and programs(), 30) or []) < 2:
        oracle.kill()
        pytest.fail(f"the sandboxed program never started: {oracle.communicate()[1][-2000:]!r}")
    main = min(programs(), key=lambda p: int(_stat_fields(p)[19]))  # the older one: not the daemon
    return oracle, needle, main


@pytest.fixture(params=CONTAINMENT_BACKENDS)
def backend(request) -> str:
    return use_backend(request.param)


def test_sandboxed_program_dies_with_a_killed_oracle(backend):
    oracle, needle, main = start_oracle(backend)
    try:
        os.kill(oracle.pid, signal.SIGKILL)
        oracle.wait()
        assert _wait_for(lambda: not _alive(main), 5), f"{backend}: {main} outlived the killed oracle"
        if backend != "landlock":  # a pid namespace dies with its first process: the daemon too
            assert _wait_for(lambda: not _live_pids_with(needle, set()), 5), \
                f"{backend}: {_live_pids_with(needle, set())} outlived the killed oracle"
    finally:
        _kill_all(_live_pids_with(needle, set()))


@pytest.mark.exclusive  # any sandbox started meanwhile (another xdist worker's) would sweep it first
def test_the_next_sandbox_sweeps_what_a_killed_oracle_left(backend):
    oracle, needle, main = start_oracle(backend)
    uid = _uid_of(main)
    leftovers = list(Path(tempfile.gettempdir()).glob(f"oracle-run-{uid}-*"))
    assert len(leftovers) == 1, leftovers
    try:
        os.kill(oracle.pid, signal.SIGKILL)
        oracle.wait()
        _wait_for(lambda: not _alive(main), 5)
        assert leftovers[0].is_dir(), "nothing left to sweep: the test would prove nothing"
        if backend == "landlock":  # the tmpfs on the work dir, and the daemon, are still there
            assert _mounted_under(str(leftovers[0]))
            assert _live_pids_with(needle, set())
        subprocess.run([sys.executable, "-c", SWEEP, backend], cwd=REPO, check=True, timeout=60,
                       capture_output=True)
        assert not leftovers[0].exists(), "the leftover temp dir was not removed"
        assert not _mounted_under(str(leftovers[0]))
        assert processes_of_uid(uid) == []
        assert _live_pids_with(needle, set()) == []
    finally:
        _kill_all(_live_pids_with(needle, set()))


def test_the_sweep_leaves_a_live_run_alone():
    """A slot whose lock is held (a run in progress in a live process) keeps its dir and processes."""
    slot = slots.claim_slot()
    if slot is None:
        pytest.skip("needs root: slots are uids")
    base = Path(tempfile.mkdtemp(prefix=f"oracle-run-{slot.uid}-"))
    sleeper = subprocess.Popen(["/usr/bin/sleep", "30"], user=slot.uid, group=slot.uid)
    try:
        check = ("import json, sys\nfrom oracle.sandbox import slots\n"
                 "print(json.dumps(slots.sweep_leftovers(sys.argv[1])))")
        out = subprocess.run([sys.executable, "-c", check, tempfile.gettempdir()], cwd=REPO,
                             check=True, capture_output=True, timeout=60)
        assert base.is_dir(), out.stdout
        assert sleeper.poll() is None, "the sweep killed a process of a slot in use"
        slot.release()
        swept = slots.sweep_leftovers(tempfile.gettempdir())  # now the lock is free: it goes
        assert not base.exists()
        assert sleeper.wait(timeout=5) == -signal.SIGKILL
        assert swept["dirs"] >= 1 and swept["processes"] >= 1
    finally:
        slot.release()
        sleeper.kill()
        sleeper.wait()
        if base.exists():
            base.rmdir()
