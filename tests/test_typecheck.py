"""The static checks (tests/static_checks.py: mypy, the import-linter contracts, no import cycle)
pass on the package.

Runs as part of the test suite so the README's test command, and so CI, runs the same command a
developer runs (``python -m tests.static_checks``). mypy's cache lives in the system temp
directory: a warm run takes seconds, a cold one about a minute.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.slow
def test_static_checks_pass():
    out = subprocess.run([sys.executable, "-m", "tests.static_checks"], cwd=ROOT, capture_output=True, text=True,
                         timeout=1800)
    summary = out.stdout.splitlines()[-3:]
    assert out.returncode == 0 and summary == ["mypy: ok", "lint-imports: ok", "import cycles: ok"], \
        out.stdout[-20000:] + out.stderr[-5000:]
