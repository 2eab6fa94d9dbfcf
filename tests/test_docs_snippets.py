"""Every ``python`` block of the README and the docs pages runs as written, offline, each in a fresh
interpreter in a temporary copy of the examples, and prints what it says it prints. The framework
adapter snippets of docs/integrations.md have their own test (tests/test_docs_integrations.py)."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.integrations_support import offline_command, offline_env
from tests.test_docs_commands import PAGES

ROOT = Path(__file__).resolve().parent.parent
OWN_TEST = {"docs/integrations.md"}
_PYTHON = re.compile(r"^```python\n(.*?)^```", re.MULTILINE | re.DOTALL)

# (page, n-th python block on it) -> patterns its stdout must match
EXPECT: dict[tuple[str, int], list[str]] = {
    ("README.md", 0): [r"^verifier ok \['good'\]$", r'"task_id":"add"'],
    ("docs/library.md", 0): [r"^verifier ok \['good'\]$", r'"task_id":"add"'],
    ("docs/library.md", 1): [r"^\[\('capital-0', True\), \('capital-1', False\)\]$"],
    ("docs/library.md", 2): [r"^task\.tests\[0\]$"],
    ("docs/library.md", 3): [r"^skipped budget 0$", r"^ok 0 1$"],
    ("docs/comparisons.md", 0): [r"^verifier 1\.0 \(1\.0, 1\.0\) cmp-py/report\.html$"],
}


def snippets() -> dict[tuple[str, int], str]:
    out = {}
    for page in PAGES:
        if page not in OWN_TEST:
            for n, code in enumerate(_PYTHON.findall((ROOT / page).read_text(encoding="utf-8"))):
                out[(page, n)] = code
    return out


def test_every_snippet_has_an_expectation():
    assert set(snippets()) == set(EXPECT)


@pytest.mark.slow
@pytest.mark.sandbox
@pytest.mark.parametrize("key", sorted(EXPECT), ids=lambda k: f"{k[0]}#{k[1]}")
def test_snippet_runs_as_written(key, tmp_path):
    for folder in ("examples", "docs/examples"):
        shutil.copytree(ROOT / folder, tmp_path / folder, ignore=shutil.ignore_patterns("__pycache__"))
    proc = subprocess.run(offline_command(snippets()[key]), cwd=tmp_path,
                          env=offline_env(str(tmp_path), str(ROOT)), capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    for pattern in EXPECT[key]:
        assert re.search(pattern, proc.stdout, re.MULTILINE), f"{pattern!r} not in:\n{proc.stdout[-3000:]}"
