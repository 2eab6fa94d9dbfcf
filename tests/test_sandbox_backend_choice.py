"""A sandbox backend this machine lacks: skipped with the prober's reason, but an error under CI.

Runs a one-test suite in a child pytest whose PATH holds no ``bwrap``, so the prober (run when the
test runs, not when it is collected) finds bubblewrap missing whatever this machine has installed.
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tests.conftest import ROOT

_ON_BUBBLEWRAP = """
import pytest

@pytest.mark.parametrize("backend", ["bubblewrap"], indirect=True)
def test_on_bubblewrap(backend):
    assert backend == "bubblewrap"
"""
_UNNAMED = "def test_unnamed(backend):\n    pass\n"


def _child_pytest(tmp_path, source: str, ci: str) -> str:
    (tmp_path / "bin").mkdir()
    probe = tmp_path / "test_probe.py"
    probe.write_text(source, encoding="utf-8")
    env = {**os.environ, "PATH": str(tmp_path / "bin"), "CI": ci, "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-rsE", "-p", "no:cacheprovider", "-p",
                           "tests.plugins.sandbox_backends", "--rootdir", str(tmp_path), str(probe)],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    return proc.stdout + proc.stderr


@pytest.mark.slow
@pytest.mark.parametrize("ci, outcome, reason", [
    ("", "1 skipped", "sandbox backend bubblewrap unavailable here: bwrap not found"),
    ("true", "1 error", "sandbox backend bubblewrap is required in CI but unavailable: bwrap not found"),
], ids=["outside-ci", "ci"])
def test_a_missing_backend_skips_but_is_an_error_under_ci(tmp_path, ci, outcome, reason):
    out = _child_pytest(tmp_path, _ON_BUBBLEWRAP, ci)
    assert outcome in out, out
    assert reason in out, out


@pytest.mark.slow
def test_the_backend_fixture_needs_a_name(tmp_path):
    out = _child_pytest(tmp_path, _UNNAMED, "")
    assert "1 error" in out and "the backend fixture needs a name" in out, out
