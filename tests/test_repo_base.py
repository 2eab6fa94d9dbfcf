"""The base snapshot (oracle/repo/base.py): extracted once per commit, shared read-only, and with
nothing of the history after the base commit reachable or even present."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

from oracle.errors import RepositoryError
from oracle.repo import destroy, make_tree, snapshot
from oracle.repo.base import LAYOUT
from tests.repo_support import FIX_MARKER, git, make_repo, write

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture()
def repo(tmp_path):
    return make_repo(tmp_path)


def _all_objects(tree: Path) -> str:
    return git(tree, "cat-file", "--batch-all-objects", "--batch-check")


def _assert_no_future(tree: Path, repo) -> None:
    """Every way a candidate could read the later history, tried on ``tree``."""
    log = git(tree, "log", "--all", "--format=%H %s")
    assert len(log.splitlines()) == 1 and repo.fix not in log and FIX_MARKER not in log
    assert git(tree, "rev-list", "--all", "--count") == "1"
    for sha in (repo.fix, repo.fix_blob):
        probe = subprocess.run(["git", "cat-file", "-t", sha], cwd=tree, capture_output=True, text=True)
        assert probe.returncode != 0, f"{sha} is readable in the snapshot"
    assert git(tree, "reflog") == ""
    assert git(tree, "stash", "list") == ""
    assert git(tree, "tag", "-l") == ""
    assert git(tree, "remote") == ""
    assert git(tree, "for-each-ref", "--format=%(refname)") == "refs/heads/main"
    objects = _all_objects(tree)
    assert repo.fix not in objects and repo.fix_blob not in objects
    # every object's content, loose or packed, and every byte of .git (pack indexes hold binary ids)
    everything = subprocess.run(["git", "cat-file", "--batch-all-objects", "--batch"], cwd=tree,
                                capture_output=True, check=True).stdout
    assert FIX_MARKER.encode() not in everything
    needles = [FIX_MARKER.encode(), repo.fix.encode(), bytes.fromhex(repo.fix), bytes.fromhex(repo.fix_blob)]
    for dirpath, _dirs, files in os.walk(tree / ".git"):
        for name in files:
            raw = (Path(dirpath) / name).read_bytes()
            for needle in needles:
                assert needle not in raw, f"{needle!r} found in {Path(dirpath) / name}"
    # nor anywhere in the working files
    for dirpath, dirs, files in os.walk(tree):
        dirs[:] = [d for d in dirs if d != ".git"]
        for name in files:
            assert FIX_MARKER.encode() not in (Path(dirpath) / name).read_bytes()


def test_snapshot_is_the_base_tree_with_a_one_commit_git(repo, tmp_path):
    snap = snapshot(str(repo.path), None, repo.base, cache_root=tmp_path / "cache")
    assert snap.commit == repo.base and not snap.reused
    assert snap.tree_id == git(repo.path, "rev-parse", f"{repo.base}^{{tree}}")
    assert (snap.path / "src/tiny/calc.py").read_text() == "def add(a, b):\n    return a - b\n\n\ndef mul(a, b):\n" \
                                                          "    return a * b\n"
    assert snap.file_count == 10
    # a repository tools can use: clean status, one commit whose tree is the base's
    assert git(snap.path, "status", "--porcelain") == ""
    assert git(snap.path, "rev-parse", "HEAD^{tree}") == snap.tree_id
    assert git(snap.path, "rev-parse", "--abbrev-ref", "HEAD") == "main"
    assert os.stat(snap.path / "scripts/run.sh").st_mode & 0o111
    _assert_no_future(snap.path, repo)


def test_snapshot_is_owned_by_us_world_readable_and_writable_by_no_one_else(repo, tmp_path):
    snap = snapshot(str(repo.path), None, repo.base, cache_root=tmp_path / "cache")
    for dirpath, dirs, files in os.walk(snap.path.parent):
        for name in [*dirs, *files, "."]:
            st = os.lstat(Path(dirpath) / name)
            if stat.S_ISLNK(st.st_mode):
                continue
            assert st.st_uid == os.geteuid()
            assert not st.st_mode & 0o022, f"{dirpath}/{name} is writable by others"
            assert st.st_mode & 0o004, f"{dirpath}/{name} is not world-readable"
            if stat.S_ISDIR(st.st_mode):
                assert st.st_mode & 0o001


def test_a_candidate_tree_of_a_bundle_snapshot_has_no_future_either(repo, tmp_path):
    """The bundle carries the fix commit, the tag and the stash: none of it reaches the tree."""
    assert repo.fix in git(repo.path, "bundle", "list-heads", str(repo.bundle))
    snap = snapshot(None, str(repo.bundle), repo.base[:10], cache_root=tmp_path / "cache")
    assert snap.commit == repo.base
    tree = make_tree(snap, tmp_path)
    try:
        assert git(tree, "status", "--porcelain") == ""
        _assert_no_future(tree, repo)
    finally:
        destroy(tree)


def test_snapshot_is_made_once_and_reused(repo, tmp_path):
    cache = tmp_path / "cache"
    first = snapshot(str(repo.path), None, repo.base, cache_root=cache)
    manifest = first.path.parent / "manifest.json"
    built = manifest.stat().st_mtime_ns
    again = snapshot(str(repo.path), None, repo.base[:7], cache_root=cache)
    assert again.reused and again.path == first.path and manifest.stat().st_mtime_ns == built
    # the same commit from the bundle: the same entry (named by the commit), and a bundle read
    # once is not read again (its identity and commit are remembered)
    from_bundle = snapshot(None, str(repo.bundle), repo.base, cache_root=cache)
    assert from_bundle.path == first.path and from_bundle.reused
    started = time.perf_counter()
    cached = snapshot(None, str(repo.bundle), repo.base, cache_root=cache)
    assert cached.reused and time.perf_counter() - started < 0.05
    assert json.loads(manifest.read_text())["commit"] == repo.base


def test_the_source_repository_is_left_as_it_was(repo, tmp_path):
    def state():
        return (git(repo.path, "for-each-ref"), git(repo.path, "rev-parse", "HEAD"), git(repo.path, "stash", "list"),
                git(repo.path, "status", "--porcelain"), sorted(p.name for p in (repo.path / ".git").iterdir()))
    before = state()
    snapshot(str(repo.path), None, repo.base, cache_root=tmp_path / "cache")
    assert state() == before


def test_two_concurrent_builders_make_one_entry(repo, tmp_path):
    cache = tmp_path / "cache"
    cache.mkdir()
    leftover = cache / f".build-{repo.base}-v{LAYOUT}-crashed"
    leftover.mkdir()  # a crashed build of the same entry: removed by the next builder
    code = ("import json, sys; from oracle.repo import snapshot; "
            "s = snapshot(sys.argv[1], None, sys.argv[2], cache_root=sys.argv[3]); "
            "print(json.dumps({'path': str(s.path), 'reused': s.reused}))")
    procs = [subprocess.Popen([sys.executable, "-c", code, str(repo.path), repo.base, str(cache)], cwd=ROOT,
                              stdout=subprocess.PIPE, text=True) for _ in range(2)]
    results = [json.loads(p.communicate(timeout=60)[0]) for p in procs]
    assert all(p.returncode == 0 for p in procs)
    assert results[0]["path"] == results[1]["path"]
    assert sorted(r["reused"] for r in results) == [False, True]
    assert not leftover.exists()
    assert [p.name for p in cache.iterdir() if p.name.startswith(".build-")] == []


def test_inherited_git_variables_and_user_config_do_not_apply(repo, tmp_path, monkeypatch):
    home = tmp_path / "home"
    home.mkdir()
    (home / ".gitconfig").write_text("[core]\n\thooksPath = /nonexistent\n[init]\n\tdefaultBranch = evil\n")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("GIT_DIR", str(tmp_path / "elsewhere"))
    monkeypatch.setenv("GIT_WORK_TREE", str(tmp_path / "elsewhere"))
    monkeypatch.setenv("GIT_INDEX_FILE", str(tmp_path / "index"))
    snap = snapshot(str(repo.path), None, repo.base, cache_root=tmp_path / "cache")
    monkeypatch.delenv("GIT_DIR")
    monkeypatch.delenv("GIT_WORK_TREE")
    monkeypatch.delenv("GIT_INDEX_FILE")
    assert git(snap.path, "rev-parse", "--abbrev-ref", "HEAD") == "main"
    assert not (tmp_path / "elsewhere").exists() and not (tmp_path / "index").exists()


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to hand the source to another user")
def test_a_source_owned_by_another_user_is_read(repo, tmp_path):
    subprocess.run(["chown", "-R", "65534:65534", str(repo.path)], check=True)
    snap = snapshot(str(repo.path), None, repo.base, cache_root=tmp_path / "cache")
    assert snap.commit == repo.base


def test_subdir_is_checked_and_is_where_tests_run(tmp_path):
    repo = make_repo(tmp_path)
    snap = snapshot(str(repo.path), None, repo.base, cache_root=tmp_path / "cache", subdir="src/tiny")
    assert snap.workdir == snap.path / "src/tiny" and (snap.workdir / "calc.py").is_file()
    assert (snap.path / "tests/test_calc.py").is_file()  # the whole repository is there
    for bad, why in [("nope", "is not a directory"), ("README.md", "is not a directory"), ("../x", "'..'"),
                     ("/abs", "absolute")]:
        with pytest.raises(RepositoryError, match=r"^task\.repository\.subdir: .*" + why):
            snapshot(str(repo.path), None, repo.base, cache_root=tmp_path / "cache", subdir=bad)


def test_errors_name_the_field(repo, tmp_path):
    cache = tmp_path / "cache"
    plain = tmp_path / "plain"
    plain.mkdir()
    cases = [
        ((str(plain), None, repo.base), r"^task\.repository\.path: .* is not a git repository"),
        # a directory inside a repository is not that repository
        ((str(repo.path / "src"), None, repo.base), r"^task\.repository\.path: .* is not a git repository"),
        ((str(tmp_path / "missing"), None, repo.base), r"^task\.repository\.path: .* is not a directory"),
        ((str(repo.path), None, "0" * 40), r"^task\.repository\.commit: 0{40} is not a commit in"),
        ((str(repo.path), None, "deadbeef"), r"^task\.repository\.commit: deadbeef is not a commit in"),
        ((str(repo.path), None, "HEAD"), r"^task\.repository\.commit: 'HEAD' is not a commit hash"),
        ((str(repo.path), None, "--all"), r"^task\.repository\.commit: '--all' is not a commit hash"),
        ((str(repo.path), str(repo.bundle), repo.base), r"^task\.repository: give exactly one of path and bundle"),
        ((None, None, repo.base), r"^task\.repository: give exactly one of path and bundle"),
        ((None, str(tmp_path / "none.bundle"), repo.base), r"^task\.repository\.bundle: .* cannot be read"),
    ]
    junk = tmp_path / "junk.bundle"
    junk.write_bytes(b"not a bundle at all\n")
    cases.append(((None, str(junk), repo.base), r"^task\.repository\.bundle: .* cannot be read as a git bundle"))
    cases.append(((None, str(plain), repo.base), r"^task\.repository\.bundle: .* is not a file"))
    # a bundle of another repository does not hold the commit
    other = make_repo(tmp_path / "o", {"a.txt": "other\n", "scripts/run.sh": "x\n", "src/tiny/calc.py": "x\n"})
    cases.append(((None, str(other.bundle), repo.base), r"^task\.repository\.commit: .* is not a commit in"))
    for args, pattern in cases:
        with pytest.raises(RepositoryError, match=pattern) as info:
            snapshot(*args, cache_root=cache)
        assert info.value.field is not None and info.value.field.startswith("task.repository")
    assert [p for p in cache.iterdir() if p.name.startswith((".build-", ".unbundle-"))] == []


def test_an_incremental_bundle_without_its_prerequisites_is_unreadable(repo, tmp_path):
    thin = tmp_path / "thin.bundle"
    git(repo.path, "bundle", "create", str(thin), f"{repo.base}..later")
    with pytest.raises(RepositoryError, match=r"^task\.repository\.bundle: .* cannot be read as a git bundle"):
        snapshot(None, str(thin), repo.fix, cache_root=tmp_path / "cache")


def test_with_test_patch_gives_the_patched_files_and_leaves_nothing_behind(repo, tmp_path, monkeypatch):
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    monkeypatch.setattr("tempfile.tempdir", str(scratch))
    snap = snapshot(str(repo.path), None, repo.base, cache_root=tmp_path / "cache")
    write(repo.path, {"tests/test_new.py": "def test_new():\n    assert 'TESTPATCH-SECRET'\n"})
    os.unlink(repo.path / "tests/conftest.py")
    git(repo.path, "add", "-A")
    patch = git(repo.path, "diff", "--cached", repo.base) + "\n"
    git(repo.path, "reset", "-q", "--hard", repo.base)
    patched = snap.with_test_patch(patch)
    assert patched == {"tests/test_new.py": b"def test_new():\n    assert 'TESTPATCH-SECRET'\n",
                       "tests/conftest.py": None}
    assert list(scratch.iterdir()) == []  # the patch's temporary copy is gone
    assert snap.with_test_patch("") == {} and snap.with_test_patch(None) == {}
    with pytest.raises(RepositoryError, match=r"^task\.test_patch: hunk 1 of src/tiny/calc\.py does not apply"):
        snap.with_test_patch("--- a/src/tiny/calc.py\n+++ b/src/tiny/calc.py\n@@ -1,2 +1,2 @@\n-nothing\n"
                             "+here\n     return a - b\n")
    with pytest.raises(RepositoryError, match=r"^task\.test_patch: patch is not a unified diff"):
        snap.with_test_patch("just words\n")
