"""ruff, as configured in pyproject.toml, passes on the whole tree, at the version the dev extra pins.

.ci/run runs the same command before the tests; this test keeps the fast loop honest too.
"""

from __future__ import annotations

import re
import subprocess
import sys
import tomllib

import pytest

from tests.conftest import ROOT
from tests.profiles import in_ci


def _ruff(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess:
    try:
        import ruff  # noqa: F401 - only whether it is installed
    except ImportError:
        if in_ci():
            raise
        pytest.skip("ruff is not installed (pip install -e '.[dev]')")
    return subprocess.run([sys.executable, "-m", "ruff", *args], cwd=ROOT, input=stdin, capture_output=True,
                          text=True, timeout=120)


def test_ruff_is_the_pinned_version():
    dev = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]["dev"]
    pins = [re.fullmatch(r"ruff==(\S+)", d) for d in dev]
    [pin] = [m.group(1) for m in pins if m]
    assert _ruff("--version").stdout.split() == ["ruff", pin]


def test_the_tree_passes_ruff():
    out = _ruff("check", "--no-cache", ".")
    assert out.returncode == 0, out.stdout[-6000:] + out.stderr[-2000:]


@pytest.mark.parametrize("source, code", [
    ("import os\n", "F401"),
    ("try:\n    pass\nexcept Exception:\n    pass\n", "BLE001"),
    ("x = 1  # noqa: E501\n", "RUF100"),
    ("y = '" + "a" * 130 + "'\n", "E501"),
])
def test_the_configuration_reports_what_it_selects(source, code):
    out = _ruff("check", "--no-cache", "--stdin-filename", "oracle/probe.py", "-", stdin=source)
    assert out.returncode == 1 and code in out.stdout, out.stdout + out.stderr
