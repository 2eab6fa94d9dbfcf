"""What the core package imports: the local-model extra's code stays out of it."""

from __future__ import annotations

import ast
import importlib.util
import json
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
CORE = ROOT / "oracle"
# CLI paths that start or probe the local model; nothing else in the package may import it.
LOCAL_MODEL_USERS = {"oracle/cli/model.py", "oracle/cli/compare.py"}


def imported_modules(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
            names.update(f"{node.module}.{alias.name}" for alias in node.names)
    return names


def core_files() -> list[Path]:
    """The package's files outside the local-model extra (policies/ and strategies/ included)."""
    skip = {CORE / "local_model"}
    files = [p for p in sorted(CORE.rglob("*.py")) if not any(s in p.parents for s in skip)]
    return files + sorted((ROOT / "policies").rglob("*.py")) + sorted((ROOT / "strategies").rglob("*.py"))


@pytest.mark.slow
def test_only_the_model_commands_import_the_local_model_package():
    users = {str(p.relative_to(ROOT)) for p in core_files()
             if any(m == "oracle.local_model" or m.startswith("oracle.local_model.") or m.startswith("llama_cpp")
                    for m in imported_modules(p))}
    assert users <= LOCAL_MODEL_USERS, users - LOCAL_MODEL_USERS
    assert "oracle/cli/model.py" in users  # the scan does see imports


@pytest.mark.slow
def test_the_llama_workaround_runs_only_as_the_server_process():
    from oracle.local_model import LAUNCHER, server_command

    assert LAUNCHER == "oracle.local_model._llama_launcher"
    assert importlib.util.find_spec(LAUNCHER) is not None
    argv = server_command(Path("/m.gguf"), host="127.0.0.1", port=1, alias="a")
    assert argv[1:3] == ["-m", LAUNCHER]
    assert not (CORE / "_llama_launcher.py").exists()
    launcher_users = [p for p in ROOT.joinpath("oracle").rglob("*.py")
                      if LAUNCHER in imported_modules(p) or "_llama_launcher" in imported_modules(p)]
    assert launcher_users == []


@pytest.mark.slow
def test_library_evaluation_loads_no_local_model_code():
    code = ("import json, sys\nfrom oracle import Oracle, OracleConfig\n"
            "r = Oracle(OracleConfig()).evaluate({'task': {'id': 't', 'prompt': 'What is 2+2?', 'reference': '4'},"
            " 'trajectories': [{'id': 'a', 'answer': '4'}]})\n"
            "print(json.dumps([r.status.value, sorted(m for m in sys.modules if 'local_model' in m or 'llama' in m)]))")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout.splitlines()[-1]) == ["ok", []]


@pytest.mark.slow
def test_the_wheel_ships_py_typed_the_subpackages_and_the_extra_module(tmp_path):
    """Built from a copy of the tree, so the shared checkout gets no build/ dir."""
    src = tmp_path / "src"
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    for tree in ("oracle", "policies", "strategies"):
        shutil.copytree(ROOT / tree, src / tree, ignore=ignore)
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, src / name)
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q",
                    "-w", str(tmp_path / "dist"), str(src)], check=True, capture_output=True, timeout=300)
    (wheel,) = (tmp_path / "dist").glob("oracle_router-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    for wanted in ("oracle/py.typed", "oracle/__init__.py", "oracle/local_model/_llama_launcher.py",
                   "oracle/policies/__init__.py", "oracle/strategies/verifier/__init__.py",
                   "oracle/sandbox/runtime/wire.js", "oracle/serve/openapi.json",
                   "oracle/strategies/llm_judge/templates/pointwise_user_v1.txt"):
        assert wanted in names, wanted
    assert not any(n.split("/")[0] in ("policies", "strategies", "tests") for n in names)
    # Every source file of the three trees is in the wheel under its oracle.* name.
    for tree, prefix in (("oracle", "oracle/"), ("policies", "oracle/policies/"), ("strategies", "oracle/strategies/")):
        for path in (src / tree).rglob("*.py"):
            assert prefix + str(path.relative_to(src / tree)) in names, path


def test_the_build_configuration_lists_every_package_directory():
    """setuptools' explicit package list (needed for the package-dir mapping) misses no package."""
    import tomllib

    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    mapping = config["package-dir"]
    found = set()
    for tree, base in (("oracle", "oracle"), ("policies", "oracle.policies"), ("strategies", "oracle.strategies")):
        for init in (ROOT / tree).rglob("__init__.py"):
            rel = init.parent.relative_to(ROOT / tree).parts
            found.add(".".join((base, *rel)))
    assert set(config["packages"]) == found
    assert mapping == {"": ".", "oracle.policies": "policies", "oracle.strategies": "strategies"}


def test_no_symlink_is_tracked():
    out = subprocess.run(["git", "ls-files", "-s"], cwd=ROOT, capture_output=True, text=True, check=True).stdout
    links = [line.split("\t", 1)[1] for line in out.splitlines() if line.startswith("120000 ")]
    assert links == []
