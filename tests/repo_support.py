"""Git repositories the repository-task tests make for themselves (issue 28): a base commit, a later
"fix" commit with content found nowhere else, a tag, a stash and a bundle, so that a test can
prove none of the later history reaches a candidate's tree."""

from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass
from pathlib import Path

GIT_ENV = {"GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": os.devnull, "GIT_AUTHOR_NAME": "t",
           "GIT_AUTHOR_EMAIL": "t@example.invalid", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@example.invalid", "LC_ALL": "C"}

FIX_MARKER = "FIX-ONLY-IN-THE-FUTURE-7f3a9c"
"""Text that exists only in the later fix commit's blob (and in the stash): a scan that finds it
in a snapshot has found the future."""

BASE_FILES = {
    "README.md": "# tiny\n",
    "setup.cfg": "[metadata]\nname = tiny\n\n[tool:pytest]\naddopts = -q\n",
    "pyproject.toml": ('[project]\nname = "tiny"\nversion = "0.1"\n\n[tool.pytest.ini_options]\n'
                       'testpaths = ["tests"]\n'),
    "src/tiny/__init__.py": "",
    "src/tiny/calc.py": "def add(a, b):\n    return a - b\n\n\ndef mul(a, b):\n    return a * b\n",
    "src/tiny/data/words.txt": "alpha\nbeta\n",
    "tests/__init__.py": "",
    "tests/conftest.py": "import pytest\n",
    "tests/test_calc.py": ("from tiny.calc import add, mul\n\n\ndef test_mul():\n    assert mul(2, 3) == 6\n\n\n"
                           "def test_add():\n    assert add(2, 3) == 5\n"),
    "scripts/run.sh": "#!/bin/sh\necho run\n",
}


def git(cwd: Path, *args: str, input: bytes | None = None) -> str:
    env = {**os.environ, **GIT_ENV}
    done = subprocess.run(["git", *args], cwd=cwd, env=env, input=input, capture_output=True, check=True)
    return done.stdout.decode().strip()


def write(root: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


@dataclass
class Repo:
    path: Path
    base: str
    fix: str
    fix_blob: str
    tag: str
    bundle: Path


def make_repo(root: Path, files: dict[str, str] | None = None, *, name: str = "src-repo") -> Repo:
    """A repository with a base commit, a later fix commit (tagged), a branch, and a stash holding
    the fix's text too; and a bundle of all of it."""
    path = root / name
    path.mkdir(parents=True)
    git(path, "init", "-q", "-b", "trunk")
    write(path, files or BASE_FILES)
    os.chmod(path / "scripts" / "run.sh", 0o755) if (path / "scripts" / "run.sh").exists() else None
    git(path, "add", "-A")
    git(path, "commit", "-q", "-m", "base")
    base = git(path, "rev-parse", "HEAD")
    fixed = f"def add(a, b):\n    # {FIX_MARKER}\n    return a + b\n\n\ndef mul(a, b):\n    return a * b\n"
    write(path, {"src/tiny/calc.py": fixed})
    git(path, "commit", "-q", "-am", f"the fix {FIX_MARKER}")
    fix = git(path, "rev-parse", "HEAD")
    fix_blob = git(path, "rev-parse", f"{fix}:src/tiny/calc.py")
    git(path, "tag", "-a", "v1.0-fixed", "-m", f"fixed release {FIX_MARKER}")
    git(path, "branch", "later", fix)
    write(path, {"src/tiny/calc.py": fixed + f"# stash {FIX_MARKER} 2\n"})
    git(path, "stash", "-q")
    git(path, "checkout", "-q", base)  # a detached HEAD at the base, as a task's clone would be
    bundle = root / f"{name}.bundle"
    git(path, "bundle", "create", str(bundle), "--all")
    return Repo(path=path, base=base, fix=fix, fix_blob=fix_blob, tag="v1.0-fixed", bundle=bundle)
