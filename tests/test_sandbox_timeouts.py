"""A test's own timeout_s governs its run: wall clock, nsjail's time limit and the CPU rlimit."""

from __future__ import annotations

import asyncio
import math
import time
from types import SimpleNamespace

import pytest
from pydantic import ValidationError

from oracle.config.model import VerifierConfig
from oracle.sandbox import RunRequest, Sandbox, SandboxLimits
from oracle.sandbox.limits import check_timeouts
from tests.plugins.sandbox_backends import on_each_backend, strongest_backend, use_backend

PYTHON = "/usr/bin/python3"


def run(backend: str, code: str, default_s: float, timeout_s: float | None):
    sandbox = Sandbox(backend=backend, limits=SandboxLimits(timeout_s=default_s))
    return asyncio.run(sandbox.run(RunRequest(command=[PYTHON, "-I", "-c", code], timeout_s=timeout_s)))


@pytest.mark.sandbox
@pytest.mark.slow  # sleeps 8 s in the sandbox, by design
def test_nsjail_honours_a_test_timeout_above_the_default():
    use_backend("nsjail")
    # Before: nsjail's --time_limit came from the default (2 s + 5) and killed this at 7 s.
    start = time.monotonic()
    out = run("nsjail", "import time\ntime.sleep(8)\nprint('slept')", default_s=2, timeout_s=12)
    assert (out.exit_code, out.timed_out, out.signal) == (0, False, None), out.stderr[-2000:]
    assert out.stdout.strip() == b"slept"
    assert 8 <= time.monotonic() - start < 12


@pytest.mark.slow
@pytest.mark.sandbox
@on_each_backend
def test_cpu_rlimit_follows_the_test_timeout(backend):
    # Default 0.5 s -> RLIMIT_CPU 2 s before; the test's 15 s allows 31 s of CPU. The wall limit is
    # far above the 2.5 s of CPU so a loaded machine cannot turn this into a timeout.
    code = ("import time\nend = time.process_time() + 2.5\nwhile time.process_time() < end:\n"
            "    pass\nprint('done')")
    out = run(backend, code, default_s=0.5, timeout_s=15)
    assert (out.exit_code, out.signal, out.timed_out) == (0, None, False), out.stderr[-2000:]
    assert out.stdout.strip() == b"done"


@pytest.mark.sandbox
def test_the_default_still_bounds_tests_without_their_own():
    backend = strongest_backend()
    start = time.monotonic()
    out = run(backend, "import time\ntime.sleep(30)", default_s=1, timeout_s=None)
    assert out.timed_out
    assert time.monotonic() - start < 5


def test_limits_for_a_run():
    base = SandboxLimits(timeout_s=5)
    assert base.for_timeout(None) is base
    assert base.for_timeout(12).timeout_s == 12
    assert base.for_timeout(12).cpu_seconds == 25
    assert base.for_timeout(12).memory_mb == base.memory_mb


def test_check_timeouts_names_the_first_test_over_the_ceiling():
    cfg = VerifierConfig(max_timeout_s=30)
    tests = [SimpleNamespace(timeout_s=None), SimpleNamespace(timeout_s=30),
             SimpleNamespace(timeout_s=31), SimpleNamespace(timeout_s=99)]
    message = check_timeouts(tests, cfg)
    assert message is not None and message.startswith("task.tests[2].timeout_s")
    assert "30" in message
    assert check_timeouts(tests[:2], cfg) is None
    assert check_timeouts([SimpleNamespace(timeout_s=math.inf)], cfg).startswith("task.tests[0]")
    assert check_timeouts([], cfg) is None


def test_check_timeouts_on_real_test_specs():
    from oracle.tasks.task import Task

    task = Task.model_validate({"id": "t", "prompt": "p", "tests": [
        {"kind": "assert", "code": "assert True", "timeout_s": 100},
        {"kind": "assert", "code": "assert True", "timeout_s": 121}]})
    assert check_timeouts(task.tests, VerifierConfig()).startswith("task.tests[1].timeout_s")
    assert check_timeouts(task.tests, VerifierConfig(max_timeout_s=200)) is None


@pytest.mark.parametrize("bad", [0, -1, math.inf, math.nan, 601])
def test_max_timeout_is_finite_positive_and_bounded(bad):
    with pytest.raises(ValidationError):
        VerifierConfig(max_timeout_s=bad)
    assert VerifierConfig().max_timeout_s == 120
