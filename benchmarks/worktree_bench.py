"""Candidate working trees: what the host side of a repository task costs per candidate, against the
naive way (``cp -a`` of the repository, ``rm -rf`` after), on a generated repository, in one run.

    python benchmarks/worktree_bench.py [--files 2000] [--repeats 15]

The repository is generated in a temporary directory (``--files`` files of a few hundred bytes to a
few KB in ~10-file packages, a third of them tests, a conftest, a pyproject with a pytest section;
a base commit and a later fix commit). Arms, interleaved (A B A B ...) so a change in the machine's
speed hits both sides alike; medians in ms:

- ``snapshot`` first (a new cache each time: extract the tree and its one-commit ``.git``) and
  cached (the entry exists: a ``git rev-parse`` and a manifest read);
- ``make_tree`` (the hardlink farm) against ``cp -a`` of the snapshot's tree, and ``destroy``
  against ``rm -rf``, with the trees on the disk (beside the cache) and on tmpfs (``/dev/shm``,
  ``worktree.default_parent()``; the base is staged there once, reported on its own line);
- the rest of the per-candidate path: ``apply_patch`` of a one-file fix, ``restore`` with a test
  patch of two files (the candidate changed nothing protected; and with a conftest added and a
  test edited), ``fingerprint`` and ``changed_since``.

The per-candidate host overhead line sums make_tree, apply_patch, restore, fingerprint,
changed_since and destroy.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from oracle.repo import apply_patch, changed_since, destroy, fingerprint, make_tree, restore, snapshot
from oracle.repo.worktree import default_parent, staged

ENV = {**os.environ, "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": os.devnull, "GIT_AUTHOR_NAME": "b",
       "GIT_AUTHOR_EMAIL": "b@example.invalid", "GIT_COMMITTER_NAME": "b", "GIT_COMMITTER_EMAIL": "b@example.invalid"}


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=cwd, env=ENV, capture_output=True, text=True, check=True).stdout.strip()


def generate(root: Path, files: int) -> tuple[Path, str, str, str]:
    """A repository of ``files`` files; returns (path, base commit, candidate patch, test patch)."""
    repo = root / "repo"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "trunk")
    (repo / "pyproject.toml").write_text('[project]\nname = "gen"\nversion = "0"\n\n[tool.pytest.ini_options]\n'
                                         'testpaths = ["tests"]\n')
    (repo / "conftest.py").write_text("")
    made = 2
    package = 0
    while made < files:
        pkg = repo / "src" / "gen" / f"pkg{package:03d}"
        tests = repo / "tests" / f"pkg{package:03d}"
        pkg.mkdir(parents=True)
        tests.mkdir(parents=True)
        for i in range(7):
            if made >= files:
                break
            body = "".join(f"def f{i}_{j}(x):\n    return x * {j} + {package}\n\n\n" for j in range(5 + (i * 13) % 40))
            (pkg / f"mod{i}.py").write_text(body)
            made += 1
        for i in range(3):
            if made >= files:
                break
            (tests / f"test_mod{i}.py").write_text(f"from gen.pkg{package:03d}.mod{i} import f{i}_1\n\n\n"
                                                   f"def test_f():\n    assert f{i}_1(2) == 2 + {package}\n")
            made += 1
        package += 1
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "base")
    base = git(repo, "rev-parse", "HEAD")
    target = repo / "src/gen/pkg000/mod0.py"
    target.write_text(target.read_text().replace("x * 1 + 0", "x * 1 + 1"))
    candidate = git(repo, "diff") + "\n"
    git(repo, "checkout", "-q", "--", ".")
    for rel in ("tests/pkg000/test_mod0.py", "tests/pkg001/test_mod1.py"):
        (repo / rel).write_text((repo / rel).read_text() + "\n\ndef test_more():\n    assert True\n")
    test_patch = git(repo, "diff") + "\n"
    git(repo, "commit", "-q", "-am", "later fix")
    return repo, base, candidate, test_patch


def ms(fn) -> float:
    started = time.perf_counter()
    fn()
    return (time.perf_counter() - started) * 1000


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--files", type=int, default=2000, help="files in the generated repository (default 2000)")
    parser.add_argument("--repeats", type=int, default=15, help="rounds per arm (medians)")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="oracle-worktree-bench-", dir="/tmp"))
    os.chmod(work, 0o755)
    shm = default_parent()
    places = {"disk": work / "trees"}
    if shm != Path(tempfile.gettempdir()):
        places["tmpfs"] = Path(tempfile.mkdtemp(prefix="bench-", dir=shm))
    res: dict[str, list[float]] = {}

    def add(name: str, value: float) -> None:
        res.setdefault(name, []).append(value)

    try:
        places["disk"].mkdir()
        repo, base_commit, candidate, test_patch = generate(work, args.files)
        for i in range(max(3, args.repeats // 3)):
            add("snapshot (first)", ms(lambda: snapshot(str(repo), None, base_commit, cache_root=work / f"c{i}")))
        cache = work / "c0"
        base = snapshot(str(repo), None, base_commit, cache_root=cache)
        for _ in range(args.repeats):
            add("snapshot (cached)", ms(lambda: snapshot(str(repo), None, base_commit, cache_root=cache)))
        if "tmpfs" in places:
            add("stage the base on tmpfs (once per base)", ms(lambda: staged(base, places["tmpfs"])))
        for r in range(args.repeats):
            for where, parent in places.items():
                copy = parent / f"copy{r}"
                made: list[Path] = []
                naive = ["cp", "-a", str(base.path), str(copy)]
                arms = [(f"make_tree [{where}]", lambda: made.append(make_tree(base, parent))),
                        (f"cp -a [{where}]", lambda: subprocess.run(naive, check=True))]
                for name, fn in (arms if r % 2 == 0 else arms[::-1]):
                    add(name, ms(fn))
                tree = made[0]
                add(f"apply_patch (1 file) [{where}]", ms(lambda: apply_patch(tree, candidate)))
                add(f"restore (test patch) [{where}]", ms(lambda: restore(tree, base, test_patch)))
                before: dict[str, str] = {}
                add(f"fingerprint [{where}]", ms(lambda: before.update(fingerprint(tree))))
                add(f"changed_since [{where}]", ms(lambda: changed_since(tree, before)))
                (tree / "src/gen/conftest.py").write_text("x = 1\n")
                os.unlink(tree / "tests/pkg002/test_mod0.py")
                (tree / "tests/pkg002/test_mod0.py").write_text("def test_f():\n    pass\n")
                add(f"restore (2 tampered files) [{where}]", ms(lambda: restore(tree, base, test_patch)))
                arms = [(f"destroy [{where}]", lambda: destroy(tree)),
                        (f"rm -rf [{where}]", lambda: subprocess.run(["rm", "-rf", str(copy)], check=True))]
                for name, fn in (arms if r % 2 == 0 else arms[::-1]):
                    add(name, ms(fn))
    finally:
        shutil.rmtree(work, ignore_errors=True)
        if "tmpfs" in places:
            destroy(places["tmpfs"])
    med = {name: statistics.median(values) for name, values in res.items()}
    print(f"generated repository: {args.files} files ({base.file_count} in the snapshot, {len(base.listing.dirs)} "
          f"directories with .git's), {args.repeats} rounds, medians in ms; trees on: "
          + ", ".join(f"{k} ({v.parent})" for k, v in places.items()))
    print(f"{'arm':<40}{'ms':>9}   {'vs':<16}{'ms':>9}{'ratio':>8}")
    for where in places:
        for ours, theirs in ((f"make_tree [{where}]", f"cp -a [{where}]"), (f"destroy [{where}]", f"rm -rf [{where}]")):
            print(f"{ours:<40}{med[ours]:>9.2f}   {theirs:<16}{med[theirs]:>9.2f}{med[ours] / med[theirs]:>8.2f}")
    print(f"{'cp -a [disk] / make_tree [tmpfs]':<40}" if "tmpfs" in places else "", end="")
    if "tmpfs" in places:
        print(f"{med['cp -a [disk]'] / med['make_tree [tmpfs]']:>9.1f}x")
    for name in ("snapshot (first)", "snapshot (cached)", "stage the base on tmpfs (once per base)"):
        if name in med:
            print(f"{name:<40}{med[name]:>9.2f}")
    for where in places:
        for name in ("apply_patch (1 file)", "restore (test patch)", "restore (2 tampered files)", "fingerprint",
                     "changed_since"):
            print(f"{name + f' [{where}]':<40}{med[name + f' [{where}]']:>9.2f}")
    for where in places:
        per_candidate = sum(med[f"{n} [{where}]"] for n in ("make_tree", "apply_patch (1 file)", "restore (test patch)",
                                                            "fingerprint", "changed_since", "destroy"))
        print(f"per-candidate host overhead [{where}]: {per_candidate:.1f} ms (make_tree + apply_patch + restore + "
              f"fingerprint + changed_since + destroy); naive cp -a + rm -rf [{where}]: "
              f"{med[f'cp -a [{where}]'] + med[f'rm -rf [{where}]']:.1f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
