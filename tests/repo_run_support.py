"""Small repositories the repository-run tests write themselves, and a way to run their tests.

A tree is laid out as the host side lays out a candidate's tree (oracle/repo/): files root-owned
(the test runs as root) 0644 and hardlinked with a base copy, directories 0755, under a directory
the sandbox user may traverse but not list (0711).
"""

from __future__ import annotations

import asyncio
import os
import shutil
import tempfile
from pathlib import Path

import pytest

from oracle.sandbox import Sandbox, interpreters
from oracle.sandbox.repo_run import RepoRun, run_repo_tests

BUGGY = "def add(a, b):\n    return a - b\n"
FIXED = "def add(a, b):\n    return a + b\n"
TESTS = ("from calc import add\n\n\ndef test_add():\n    assert add(2, 2) == 4\n\n\n"
         "def test_zero():\n    assert add(0, 0) == 0\n")
ADD, ZERO = "tests/test_calc.py::test_add", "tests/test_calc.py::test_zero"


def calc_repo(module: str = BUGGY, **extra: str) -> dict[str, str]:
    """A tiny library with a real bug (``add`` subtracts) and its tests; ``extra`` adds files."""
    return {"calc/__init__.py": module, "tests/test_calc.py": TESTS, **extra}


@pytest.fixture(scope="module")
def trees_root():
    root = tempfile.mkdtemp(prefix="oracle-test-trees-")
    os.chmod(root, 0o711)
    yield Path(root)
    shutil.rmtree(root, ignore_errors=True)


def make_tree(root: Path, files: dict[str, str], name: str | None = None) -> Path:
    """A base copy and a tree of hardlinks to it (``<tree>.base`` holds the base)."""
    tree = Path(tempfile.mkdtemp(dir=root, prefix=(name or "tree") + "-"))
    base = Path(str(tree) + ".base")
    for rel, text in files.items():
        target = base / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text)
    for dirpath, dirnames, filenames in os.walk(base):
        rel = os.path.relpath(dirpath, base)
        os.makedirs(tree / rel, exist_ok=True)
        os.chmod(dirpath, 0o755)
        os.chmod(tree / rel, 0o755)
        for f in filenames:
            os.chmod(os.path.join(dirpath, f), 0o644)
            os.link(os.path.join(dirpath, f), tree / rel / f)
    return tree


def python() -> str:
    found, refused = interpreters.find_default()
    if found is None:
        pytest.skip(f"no interpreter the sandbox user can run: {refused}")
    return found


def run(backend: str, tree: Path, node_ids: list[str], **kw) -> RepoRun:
    kw.setdefault("command", None)
    kw.setdefault("junit_xml", None)
    kw.setdefault("timeout_s", 60)
    return asyncio.run(run_repo_tests(Sandbox(backend=backend), tree, node_ids=node_ids, python=python(), **kw))


def not_passed(result: RepoRun, *node_ids: str) -> bool:
    return all(result.outcomes[n].outcome != "passed" for n in node_ids)
