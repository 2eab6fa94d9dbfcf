"""The in-sandbox runtime is one package that stands alone, and nothing puts a path on sys.path.

Why: the host imports the runtime as ``oracle.sandbox.runtime``; each sandbox runs a copy of the
same files as the package ``runtime`` (``python -E -s -m runtime.zygote`` from the read-only
``/src``). Both work only if the runtime imports nothing but the standard library and its siblings
(relatively); and the sandbox's copy is safe only if no directory a run can write is on the
interpreter's ``sys.path`` (a run would plant a module that the next import in its process loads).
"""

from __future__ import annotations

import ast
import asyncio
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from oracle.config.model import OracleConfig
from oracle.results.result import Status
from oracle.sandbox.workers import RUNTIME_DIR, RUNTIME_PACKAGE, install_runtime
from oracle.strategies.protocol import EvaluationContext
from oracle.strategies.verifier.strategy import VerifierStrategy
from oracle.tasks.task import Task, Trajectory
from tests.plugins.sandbox_backends import on_each_backend

TESTS = Path(__file__).resolve().parent


PYTEST_IMPORTS = {"pytest_side.py": {"pytest"}, "zygote.py": {"_pytest"},
                  "repo_boot.py": {"pytest", "_pytest"}, "repo_report.py": {"pytest", "_pytest"},
                  "wire_values.py": {"numpy"}}
"""The exceptions: a pytest run's process imports pytest, and a test worker's zygote preloads it,
from the read-only directory the host names (oracle/sandbox/pinned_pytest.py), never from the runtime
(a repository run's bootstrap and report plugin likewise: oracle/sandbox/repo_run.py); and the codec
imports numpy inside a function, only when an array arrives, from the task's environment (a side
without it says so)."""


def test_the_runtime_imports_only_the_standard_library_and_its_siblings_relatively():
    siblings = {p.stem for p in RUNTIME_DIR.glob("*.py")}
    wrong = []
    for path in sorted(RUNTIME_DIR.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0:
                names = [node.module or ""]
            else:
                continue
            for name in names:
                top = name.split(".")[0]
                if top in PYTEST_IMPORTS.get(path.name, ()):
                    continue
                if top in siblings or top not in sys.stdlib_module_names:
                    wrong.append(f"{path.name}:{node.lineno}: import {name}")
    assert wrong == [], wrong


def test_the_copy_a_sandbox_gets_imports_without_oracle(tmp_path):
    package = install_runtime(tmp_path)
    assert package == tmp_path / RUNTIME_PACKAGE
    names = sorted(p.stem for p in RUNTIME_DIR.glob("*.py") if p.stem != "__init__")
    assert sorted(p.stem for p in package.glob("*.py") if p.stem != "__init__") == names
    assert sorted(p.name for p in package.glob("*.js")) == sorted(p.name for p in RUNTIME_DIR.glob("*.js"))
    code = ("import importlib, json, sys\n"
            f"mods = [importlib.import_module('{RUNTIME_PACKAGE}.' + n) for n in {names!r}]\n"
            "print(json.dumps({'files': [m.__file__ for m in mods], 'path0': sys.path[0],\n"
            "                  'oracle': sorted(m for m in sys.modules if m.split('.')[0] == 'oracle')}))\n")
    out = subprocess.run([sys.executable, "-E", "-s", "-c", code], cwd=tmp_path, capture_output=True,
                         text=True, timeout=60, env={"PATH": "/usr/bin:/bin"})
    assert out.returncode == 0, out.stderr
    seen = json.loads(out.stdout)
    assert seen["oracle"] == []
    assert all(Path(f).parent == package for f in seen["files"]), seen["files"]


def _edits(source: str) -> list[str]:
    target = r"sys\s*\.\s*path"
    pattern = re.compile(rf"{target}\s*(\.\s*(insert|append|extend|remove|pop|clear)\s*\(|"
                         r"\+=|\[[^\]]*\]\s*=(?!=)|=(?!=))")
    return [m.group(0) for m in pattern.finditer(source)]


def test_no_test_module_edits_sys_path():
    assert _edits("import sys\nsys" + ".path.insert(0, 'x')\n")  # the check itself can fail
    assert _edits("sys" + ".path[:0] = ['x']\n") and not _edits("sys" + ".path[0] == 'x'\n")
    found = {p.name: hits for p in sorted(TESTS.rglob("*.py")) if (hits := _edits(p.read_text()))}
    assert found == {}, found


SYS_PATH_PROBE = (
    "import os, sys\n"
    "def add(a, b):\n"
    "    bad = [p for p in sys.path if not os.path.isabs(p) or (os.path.exists(p) and os.access(p, os.W_OK))]\n"
    "    return a + b if not bad and sys.path[0].endswith('src') else ['writable or relative', sys.path]\n")


@pytest.mark.sandbox
@on_each_backend
def test_a_run_finds_nothing_it_can_write_on_its_sys_path(backend):
    task = Task(id="add", prompt="", language="python", entry_point="add",
                tests=[{"kind": "call", "name": "call", "call": "add(2, 3)", "expected": 5}])
    config = OracleConfig(verifier={"backend": backend, "timeout_s": 6, "workers": 1})
    strategy = VerifierStrategy()
    try:
        result = asyncio.run(strategy.evaluate(EvaluationContext(
            task=task, trajectories=(Trajectory(id="probe", code=SYS_PATH_PROBE),), config=config)))
    finally:
        strategy.close()
    assert result.status is Status.ok, result.error
    candidate = result.candidate("probe")
    assert candidate.passed is True, candidate.details["tests"]
