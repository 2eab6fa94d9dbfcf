"""Modules and import cycles of the package: this tree against an older commit (issue 25).

    python benchmarks/import_graph.py [--baseline-ref d1ac9ca]

Both trees are installed, not editable, into a temporary directory (the commit's from
``git archive``: its symlinked oracle/policies and oracle/strategies become folders, as in a wheel)
and read with grimp, import-linter's graph library, in a fresh interpreter (tests/static_checks.py
does the same for the cycle check). Printed for each: the number of modules, of direct imports
between them, of import cycles as groups of modules that import each other (strongly connected
components) with the modules in them, and of elementary cycles. Imports inside functions count;
each figure is given with imports under ``if TYPE_CHECKING:`` counted and without them (grimp
cannot leave them out of one graph after building it, so the second figure comes from a second
graph built with ``exclude_type_checking_imports``). Nothing is left out of the cycles, here or in
the cycle check.
"""

from __future__ import annotations

import argparse
import io
import json
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.static_checks import copy_build_inputs, cycles, install_tree  # noqa: E402  (imports nothing from oracle)

DEFAULT_BASELINE = "d1ac9ca"
"""The last commit of the old layout (oracle/policies and oracle/strategies as symlinks)."""

_GRAPHS = """
import json, sys
sys.path.insert(0, sys.argv[1])
import grimp, oracle
assert oracle.__file__.startswith(sys.argv[1]), oracle.__file__
out = {}
for key, exclude in (("all", False), ("runtime", True)):
    g = grimp.build_graph("oracle", exclude_type_checking_imports=exclude, cache_dir=None)
    out[key] = {"modules": sorted(g.modules),
                "imports": sorted((m, t) for m in g.modules for t in g.find_modules_directly_imported_by(m))}
print(json.dumps(out))
"""


def figures(site: Path) -> dict[str, dict[str, object]]:
    """For the package installed in ``site``: per graph, modules, imports, cycle groups and cycles."""
    out = subprocess.run([sys.executable, "-P", "-c", _GRAPHS, str(site)], check=True, capture_output=True,
                         text=True, timeout=600)
    result = {}
    for key, graph in json.loads(out.stdout).items():
        groups, elementary = cycles(graph["modules"], graph["imports"])
        result[key] = {"modules": len(graph["modules"]), "imports": len(graph["imports"]), "groups": groups,
                       "in_groups": sum(len(g) for g in groups), "elementary": elementary}
    return result


def export_commit(ref: str, dest: Path) -> str:
    """The tree of commit ``ref`` extracted into ``dest`` (``git archive``); returns the short hash."""
    commit = subprocess.run(["git", "rev-parse", "--short", f"{ref}^{{commit}}"], cwd=ROOT, check=True,
                            capture_output=True, text=True).stdout.strip()
    data = subprocess.run(["git", "archive", "--format=tar", commit], cwd=ROOT, check=True, capture_output=True).stdout
    dest.mkdir(parents=True)
    with tarfile.open(fileobj=io.BytesIO(data)) as tar:
        tar.extractall(dest, filter="tar")
    return commit


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline-ref", default=DEFAULT_BASELINE)
    parser.add_argument("--list", action="store_true", help="also list the modules of every cycle group")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="import-graph-") as tmp:
        work = Path(tmp)
        commit = export_commit(args.baseline_ref, work / "baseline-src")
        arms = {f"baseline {commit}": install_tree(work / "baseline-src", work / "baseline-site"),
                "this tree": install_tree(copy_build_inputs(ROOT, work / "tree-src"), work / "tree-site")}
        print(f"{'':<18} {'imports counted':<22} {'modules':>7} {'imports':>7} {'cycle groups':>12} "
              f"{'modules in them':>15} {'cycles':>6}")
        for name, site in arms.items():
            for key, data in figures(site).items():
                what = "all (TYPE_CHECKING too)" if key == "all" else "run time only"
                print(f"{name:<18} {what:<22} {data['modules']:>7} {data['imports']:>7} {len(data['groups']):>12} "
                      f"{data['in_groups']:>15} {data['elementary']:>6}")
                if args.list:
                    for group in data["groups"]:
                        print(f"    {len(group)}: {', '.join(group)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
