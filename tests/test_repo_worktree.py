"""Candidate trees (oracle/repo/worktree.py): a hardlink farm of the base whose shared files no run
can write, directories of its own, and a removal that never follows a link."""

from __future__ import annotations

import os
import stat
import subprocess
import tempfile
from pathlib import Path

import pytest

from oracle.repo import destroy, make_tree, own_dirs, snapshot
from tests.repo_support import git, make_repo

OTHER_UID = 65534
root_only = pytest.mark.skipif(os.geteuid() != 0, reason="needs root (a run's uid differs from the files' owner)")


@pytest.fixture()
def base(tmp_path):
    repo = make_repo(tmp_path)
    return snapshot(str(repo.path), None, repo.base, cache_root=tmp_path / "cache")


def _files(top: Path) -> dict[str, bytes]:
    out = {}
    for dirpath, _dirs, files in os.walk(top):
        for name in files:
            path = Path(dirpath) / name
            out[str(path.relative_to(top))] = path.read_bytes() if not path.is_symlink() else b"link"
    return out


def test_a_tree_shares_the_base_files_and_has_its_own_directories(base, tmp_path):
    tree = make_tree(base, tmp_path)
    try:
        assert _files(tree) == _files(base.path)
        for rel in ("src/tiny/calc.py", "tests/test_calc.py", ".git/objects/pack"):
            if (tree / rel).is_dir():
                continue
            assert os.stat(tree / rel).st_ino == os.stat(base.path / rel).st_ino
        for rel in ("src", "src/tiny", "tests", ".git"):
            assert os.stat(tree / rel).st_ino != os.stat(base.path / rel).st_ino
        packs = list((tree / ".git/objects/pack").iterdir())
        assert packs and all(os.stat(p).st_ino == os.stat(base.path / ".git/objects/pack" / p.name).st_ino
                             for p in packs)
        for rel in (".git/index", ".git/HEAD", ".git/config"):  # the mutable part of .git is a copy
            assert os.stat(tree / rel).st_ino != os.stat(base.path / rel).st_ino
        st = os.stat(tree / "src/tiny/calc.py")
        assert st.st_uid == os.geteuid() and stat.S_IMODE(st.st_mode) == 0o644 and st.st_nlink >= 2
        assert stat.S_IMODE(os.stat(tree / "scripts/run.sh").st_mode) == 0o755
        assert git(tree, "status", "--porcelain") == ""
        assert git(tree, "rev-list", "--all", "--count") == "1"
    finally:
        destroy(tree)


def test_copy_mode_shares_nothing(base, tmp_path):
    tree = make_tree(base, tmp_path, share=False)
    try:
        assert _files(tree) == _files(base.path)
        assert os.stat(tree / "src/tiny/calc.py").st_ino != os.stat(base.path / "src/tiny/calc.py").st_ino
        assert git(tree, "status", "--porcelain") == ""
    finally:
        destroy(tree)


@root_only
def test_a_run_uid_owns_the_directories_but_cannot_write_a_shared_file(base, tmp_path):
    tree = make_tree(base, tmp_path)
    outside = tmp_path / "outside"
    outside.mkdir()
    os.symlink(outside, tree / "src" / "escape")  # a link in the tree: own_dirs must not chown through it
    try:
        own_dirs(tree, OTHER_UID)
        for dirpath, dirs, files in os.walk(tree):
            rel = os.path.relpath(dirpath, tree)
            owner = os.lstat(dirpath).st_uid
            if rel == ".git" or rel.startswith(".git/"):
                assert owner == os.geteuid(), f"{rel} was given away"
            else:
                assert owner == OTHER_UID, rel
            for name in files:
                if not os.path.islink(os.path.join(dirpath, name)):
                    assert os.lstat(os.path.join(dirpath, name)).st_uid == os.geteuid()
        assert os.stat(outside).st_uid == os.geteuid()
        attempt = ("import os, sys\n"
                   "try:\n    open('src/tiny/calc.py', 'a').write('x')\n    print('wrote in place')\n"
                   "except PermissionError:\n    print('refused')\n"
                   "os.unlink('src/tiny/calc.py'); open('src/tiny/calc.py', 'w').write('mine\\n')\n"
                   "try:\n    open('.git/config', 'a')\n    print('git writable')\nexcept PermissionError:\n"
                   "    print('git refused')\n")
        done = subprocess.run(["python3", "-c", attempt], cwd=tree, user=OTHER_UID, group=OTHER_UID,
                              capture_output=True, text=True, check=True)
        assert done.stdout.split() == ["refused", "git", "refused"]
        assert (tree / "src/tiny/calc.py").read_text() == "mine\n"
        assert (base.path / "src/tiny/calc.py").read_text().startswith("def add(a, b):\n    return a - b")
    finally:
        destroy(tree)


def test_destroy_never_follows_a_link(base, tmp_path):
    outside = tmp_path / "outside"
    (outside / "deep").mkdir(parents=True)
    (outside / "keep.txt").write_text("keep")
    (outside / "deep" / "keep2.txt").write_text("keep")
    before = _files(base.path)
    tree = make_tree(base, tmp_path)
    os.symlink("/", tree / "root-link")
    os.symlink(base.path, tree / "base-link")
    os.symlink(outside, tree / "src" / "outside-link")
    os.symlink(outside / "keep.txt", tree / "tests" / "conftest.py.link")
    os.unlink(tree / "tests" / "test_calc.py")
    os.symlink(outside / "keep.txt", tree / "tests" / "test_calc.py")
    (tree / "locked").mkdir()
    (tree / "locked" / "f").write_text("x")
    os.chmod(tree / "locked", 0)
    destroy(tree)
    assert not os.path.lexists(tree)
    assert (outside / "keep.txt").read_text() == "keep" and (outside / "deep" / "keep2.txt").exists()
    assert _files(base.path) == before
    assert os.path.isdir("/usr/bin")


def test_destroy_of_a_link_removes_only_the_link(base, tmp_path):
    tree = make_tree(base, tmp_path)
    link = tmp_path / "tree-link"
    os.symlink(tree, link)
    destroy(link)
    assert not os.path.lexists(link) and (tree / "src/tiny/calc.py").is_file()
    destroy(tree)
    destroy(tree)  # already gone: nothing to do
    assert not tree.exists()


def test_many_trees_share_one_base(base, tmp_path):
    trees = [make_tree(base, tmp_path) for _ in range(3)]
    try:
        assert os.stat(base.path / "src/tiny/calc.py").st_nlink == 4
    finally:
        for tree in trees:
            destroy(tree)
    assert os.stat(base.path / "src/tiny/calc.py").st_nlink == 1


def _tmpfs() -> Path | None:
    from oracle.repo.worktree import SHM_TREES, default_parent
    return default_parent() if default_parent() == SHM_TREES else None


@pytest.mark.skipif(_tmpfs() is None, reason="no tmpfs at /dev/shm")
def test_trees_on_another_filesystem_link_one_staged_copy_of_the_base(base, tmp_path):
    from oracle.repo import restore
    from oracle.repo.worktree import reference, staged

    parent = Path(tempfile.mkdtemp(dir=_tmpfs()))
    try:
        first, second = make_tree(base, parent), make_tree(base, parent)
        copy = staged(base, parent)
        assert copy.path != base.path and os.stat(copy.path).st_dev == os.stat(parent).st_dev
        assert reference(base, first) == copy and reference(base, tmp_path) == base
        assert _files(copy.path) == _files(base.path) and _files(first) == _files(base.path)
        calc = os.stat(copy.path / "src/tiny/calc.py")
        assert os.stat(first / "src/tiny/calc.py").st_ino == calc.st_ino == os.stat(second / "src/tiny/calc.py").st_ino
        assert calc.st_nlink == 3 and stat.S_IMODE(calc.st_mode) == 0o644
        assert os.stat(base.path / "src/tiny/calc.py").st_nlink == 1  # the cache's file is not linked across
        assert git(first, "status", "--porcelain") == ""
        # restore puts a tampered test back as a link of the staged copy
        os.unlink(first / "tests/test_calc.py")
        (first / "tests/test_calc.py").write_text("def test_add():\n    pass\n")
        assert [c.path for c in restore(first, base, None)] == ["tests/test_calc.py"]
        assert os.stat(first / "tests/test_calc.py").st_ino == os.stat(copy.path / "tests/test_calc.py").st_ino
        destroy(first)
        destroy(second)
        assert _files(copy.path) == _files(base.path)
    finally:
        destroy(parent)


@pytest.mark.skipif(_tmpfs() is None, reason="no tmpfs at /dev/shm")
def test_a_staged_copy_left_by_a_dead_process_is_swept(base):
    from oracle.repo.worktree import staged

    parent = Path(tempfile.mkdtemp(dir=_tmpfs()))
    try:
        gone = subprocess.Popen(["true"])
        gone.wait()
        leftover = parent / f".staged-{gone.pid}-abc"  # a killed oracle's
        (leftover / "tree").mkdir(parents=True)
        alive = parent / f".staged-{os.getppid()}-keep"  # a live process's
        alive.mkdir()
        staged(base, parent)
        assert not leftover.exists() and alive.exists()
    finally:
        destroy(parent)


@root_only
def test_a_tree_in_the_default_parent_is_readable_by_a_run_uid(base):
    from oracle.repo.worktree import default_parent

    parent = default_parent()
    assert not os.stat(parent).st_mode & 0o022
    tree = make_tree(base, parent)
    try:
        own_dirs(tree, OTHER_UID)
        done = subprocess.run(["python3", "-c", "print(open('src/tiny/calc.py').read().split()[1])"], cwd=tree,
                              user=OTHER_UID, group=OTHER_UID, capture_output=True, text=True)
        assert done.returncode == 0, done.stderr
        assert done.stdout.strip() == "add(a,"
        listing = subprocess.run(["ls", str(parent)], user=OTHER_UID, capture_output=True, text=True)
        assert listing.returncode != 0 if parent.name == "oracle-trees" else True  # 0711: passable, not listable
    finally:
        destroy(tree)


@pytest.mark.skipif(_tmpfs() is None, reason="no tmpfs at /dev/shm")
def test_an_evicted_staged_copy_leaves_its_trees_whole(base, tmp_path, monkeypatch):
    from oracle.repo import restore
    from oracle.repo import worktree

    monkeypatch.setattr(worktree, "STAGED_KEEP", 1)
    other_repo = make_repo(tmp_path / "other")
    git(other_repo.path, "commit", "-q", "--allow-empty", "-m", "another base")
    other = snapshot(str(other_repo.path), None, git(other_repo.path, "rev-parse", "HEAD"),
                     cache_root=tmp_path / "cache")
    parent = Path(tempfile.mkdtemp(dir=_tmpfs()))
    try:
        tree = make_tree(base, parent)
        first_copy = worktree.staged(base, parent).path
        make_tree(other, parent)  # stages the other base: the first copy is removed
        assert not first_copy.exists()
        assert _files(tree) == _files(base.path)  # hardlinks outlive the staged names
        os.unlink(tree / "tests/conftest.py")
        assert [(c.path, c.change) for c in restore(tree, base, None)] == [("tests/conftest.py", "deleted")]
        assert (tree / "tests/conftest.py").read_text() == (base.path / "tests/conftest.py").read_text()
    finally:
        destroy(parent)


@pytest.fixture()
def open_cache():
    """A snapshot cache whose parents the sandbox's uid may pass (pytest's tmp_path is 0700)."""
    import shutil

    place = Path(tempfile.mkdtemp(prefix="oracle-test-cache-", dir="/tmp"))
    os.chmod(place, 0o755)
    try:
        yield place
    finally:
        shutil.rmtree(place, ignore_errors=True)


@pytest.mark.skipif(_tmpfs() is None, reason="no tmpfs at /dev/shm")
def test_trees_go_on_tmpfs_only_when_the_base_fits(tmp_path, open_cache):
    from oracle.repo.worktree import base_bytes, choose_parent

    repo = make_repo(tmp_path)
    base = snapshot(str(repo.path), None, repo.base, cache_root=open_cache / "repositories")
    size = base_bytes(base)
    assert size == sum(os.lstat(base.path / rel).st_size for rel in base.listing.files) and size > 0
    fits = choose_parent(base)
    assert (fits.kind, fits.parent) == ("tmpfs", _tmpfs()) and "fit" in fits.reason
    big = choose_parent(base, tmpfs_max_bytes=size - 1)
    assert big.kind == "disk" and "exceed the tmpfs limit" in big.reason
    # On disk, beside the snapshot cache: the base's own filesystem, so trees link the base itself.
    assert big.parent == open_cache / "repositories" / ".trees"
    assert os.stat(big.parent).st_dev == os.stat(base.path).st_dev
    assert stat.S_IMODE(os.stat(big.parent).st_mode) == 0o711
    tree = make_tree(base, big.parent)
    try:
        assert tree.parent == big.parent and _files(tree) == _files(base.path)
        if os.geteuid() == 0:
            assert os.stat(tree / "src/tiny/calc.py").st_ino == os.stat(base.path / "src/tiny/calc.py").st_ino
    finally:
        destroy(tree)


def test_disk_trees_fall_back_to_the_temporary_directory_when_the_cache_cannot_be_passed(base, tmp_path):
    """pytest's tmp_path is 0700 above: a run's uid could not reach a tree there."""
    from oracle.repo.worktree import choose_parent

    place = choose_parent(base, tmpfs_max_bytes=-1)
    assert place.kind == "disk" and place.parent == Path(tempfile.gettempdir())
