"""mypy (pinned in the dev extra, settings in pyproject.toml) reports no error on the package.

Runs as part of the test suite so the README's test command, and so CI, type-checks the code. The
cache lives in the system temp directory: a warm run takes seconds, a cold one about a minute.
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.slow
def test_mypy_is_clean():
    cache = Path(tempfile.gettempdir()) / "oracle-router-mypy-cache"
    out = subprocess.run([sys.executable, "-m", "mypy", "--cache-dir", str(cache)], cwd=ROOT,
                         capture_output=True, text=True, timeout=900)
    errors = [line for line in out.stdout.splitlines() if ": error:" in line]
    assert out.returncode == 0 and not errors, f"{len(errors)} mypy errors:\n" + out.stdout[-20000:] + out.stderr
