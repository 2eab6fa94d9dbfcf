"""The static checks in one command: mypy, the import-linter contracts, and no import cycle.

    python -m tests.static_checks          (from the repository root; exit 0 when all pass)

Why an installed copy: policies/ and strategies/ become ``oracle.policies`` and
``oracle.strategies`` through setuptools' package-dir mapping (pyproject.toml), which neither mypy
nor import-linter's graph library (grimp) follows: run on the repository they would miss those two
packages or see them under other names. So the tree's package sources are copied and installed,
not editable, into a temporary directory (``pip install --no-deps --no-build-isolation --target``),
and every tool runs there, where each module exists once, as a file under its ``oracle.`` name.
Each tool's list of what it analysed is checked against the installed files: every module exactly
once.

- mypy, with the settings in pyproject.toml (``packages = ["oracle"]``);
- ``lint-imports`` with the contracts in pyproject.toml (layers, rooms that must not know each
  other);
- no import cycle among the package's modules (grimp's graph: imports inside functions and under
  ``TYPE_CHECKING`` count).

tests/test_typecheck.py runs this command, so the README's test command and CI run it too.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
BUILD_INPUTS = ("pyproject.toml", "README.md", "oracle", "policies", "strategies")
"""What building the package reads: its configuration, the readme its metadata embeds, and the
three package folders (copied so that a stale build/ folder or a local file cannot leak in)."""

def install_tree(source: Path, site: Path) -> Path:
    """Install the package whose build inputs are in ``source`` into ``site`` (emptied first): a
    plain, non-editable copy, as a wheel would lay it out. Returns ``site``."""
    shutil.rmtree(site, ignore_errors=True)
    site.mkdir(parents=True)
    subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-build-isolation",
                    "--no-compile", "--disable-pip-version-check", "--target", str(site), str(source)],
                   check=True, capture_output=True, text=True)
    return site


def copy_build_inputs(root: Path, dest: Path) -> Path:
    """The package's sources as they are in ``root`` now (committed or not), copied to ``dest``."""
    shutil.rmtree(dest, ignore_errors=True)
    dest.mkdir(parents=True)
    for name in BUILD_INPUTS:
        src = root / name
        if src.is_dir():
            shutil.copytree(src, dest / name, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        else:
            shutil.copy2(src, dest / name)
    return dest


def installed_modules(site: Path) -> set[str]:
    """The dotted name of every Python file of the installed package."""
    out = set()
    for path in (site / "oracle").rglob("*.py"):
        parts = path.relative_to(site).with_suffix("").parts
        out.add(".".join(parts[:-1] if parts[-1] == "__init__" else parts))
    return out


def import_graph(site: Path) -> dict[str, Any]:
    """Modules and import cycles of the package installed in ``site``, computed in a fresh
    interpreter whose first path entry is ``site`` (this process may have imported another copy)."""
    env = {**os.environ, "PYTHONPATH": str(site)}  # the installed copy first, before this checkout
    out = subprocess.run([sys.executable, "-P", str(Path(__file__).resolve()), "--graph", str(site)],
                         check=True, capture_output=True, text=True, timeout=600, env=env)
    return json.loads(out.stdout)  # type: ignore[no-any-return]


def _graph_main(site: str) -> None:
    """``--graph SITE``: print the package's modules, direct imports and cycles as JSON (run with
    ``PYTHONPATH=SITE``, so the installed copy is the one imported)."""
    import grimp

    import oracle

    if not Path(oracle.__file__).resolve().is_relative_to(Path(site).resolve()):
        raise SystemExit(f"oracle imported from {oracle.__file__}, not from {site}")
    graph = grimp.build_graph("oracle", cache_dir=None)  # TYPE_CHECKING imports included
    edges = sorted((m, t) for m in graph.modules for t in graph.find_modules_directly_imported_by(m))
    print(json.dumps({"modules": sorted(graph.modules), "imports": edges}))


def cycles(modules: list[str], imports: list[tuple[str, str]]) -> tuple[list[list[str]], int]:
    """The import cycles: one group of modules per strongly connected component with more than one
    module (a module that imports itself does not occur), and the number of elementary cycles."""
    import networkx as nx

    g = nx.DiGraph()
    g.add_nodes_from(modules)
    g.add_edges_from(map(tuple, imports))
    groups = sorted((sorted(c) for c in nx.strongly_connected_components(g) if len(c) > 1), key=lambda c: (-len(c), c))
    return groups, sum(1 for _ in nx.simple_cycles(g))


def check_graph(site: Path) -> list[str]:
    """Problems with the import graph: a module it missed or saw twice, a cycle."""
    graph = import_graph(site)
    problems = []
    expected = installed_modules(site)
    if sorted(graph["modules"]) != sorted(expected):
        problems.append(f"grimp's modules differ from the installed files: missing "
                        f"{sorted(expected - set(graph['modules']))}, extra {sorted(set(graph['modules']) - expected)}")
    groups, _ = cycles(graph["modules"], graph["imports"])
    for group in groups:
        problems.append(f"import cycle among {len(group)} modules: {', '.join(group)}")
    return problems


def run_mypy(site: Path, cache: Path) -> list[str]:
    """mypy over the installed package; problems: its errors, or a module it missed or saw twice."""
    report = site.parent / "mypy-report"
    shutil.rmtree(report, ignore_errors=True)
    out = subprocess.run([sys.executable, "-m", "mypy", "--config-file", str(ROOT / "pyproject.toml"),
                          "--cache-dir", str(cache), "--linecount-report", str(report)],
                         cwd=site, capture_output=True, text=True, timeout=1800)
    print(out.stdout, end="")
    print(out.stderr, end="", file=sys.stderr)
    problems = [line for line in out.stdout.splitlines() if ": error:" in line]
    if out.returncode != 0 and not problems:
        problems.append(f"mypy exited {out.returncode}")
    if (report / "linecount.txt").exists():
        seen = [line.split()[-1] for line in (report / "linecount.txt").read_text().splitlines()[1:]]
        # A folder of data files (the judge's templates) is a namespace package to mypy: no file.
        files = [m for m in seen if not (site / m.replace(".", "/")).is_dir()
                 or (site / m.replace(".", "/") / "__init__.py").exists()]
        expected = installed_modules(site)
        if len(files) != len(set(files)) or set(files) != expected:
            problems.append(f"mypy checked {len(files)} modules ({len(set(files))} distinct), the package has "
                            f"{len(expected)}: missing {sorted(expected - set(files))}, extra "
                            f"{sorted(set(files) - expected)}")
    else:
        problems.append("mypy wrote no linecount report")
    return problems


def run_lint_imports(site: Path) -> list[str]:
    """``lint-imports`` with the contracts in pyproject.toml, on the installed package."""
    code = "import sys\nfrom importlinter.cli import lint_imports_command\nsys.exit(lint_imports_command())"
    out = subprocess.run([sys.executable, "-c", code, str(ROOT / "pyproject.toml"), "--no-cache"],
                         cwd=site, capture_output=True, text=True, timeout=600)
    print(out.stdout, end="")
    print(out.stderr, end="", file=sys.stderr)
    problems = [] if out.returncode == 0 else [f"lint-imports: broken contracts (exit {out.returncode})"]
    analysed = re.search(r"Analyzed (\d+) files", out.stdout)
    expected = len(installed_modules(site))
    if analysed is None or int(analysed.group(1)) != expected:
        problems.append(f"lint-imports analysed {analysed.group(1) if analysed else 'no'} files, the package has "
                        f"{expected}")
    return problems


def work_dir(root: Path = ROOT) -> Path:
    """One place per checkout in the temp directory: the same paths each run keep mypy's cache warm."""
    key = hashlib.sha256(str(root).encode()).hexdigest()[:12]
    return Path(tempfile.gettempdir()) / f"oracle-router-static-checks-{key}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.static_checks", description=__doc__.splitlines()[0])
    parser.add_argument("--graph", metavar="SITE", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.graph:
        _graph_main(args.graph)
        return 0
    work = work_dir()
    site = install_tree(copy_build_inputs(ROOT, work / "src"), work / "site")
    problems = {"mypy": run_mypy(site, work / "mypy-cache"), "lint-imports": run_lint_imports(site),
                "import cycles": check_graph(site)}
    failed = False
    for tool, found in problems.items():
        print(f"{tool}: {'ok' if not found else 'FAILED'}")
        for problem in found:
            print(f"  {problem}")
        failed = failed or bool(found)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
