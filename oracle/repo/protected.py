"""The protected surface of a candidate's tree: what decides a verdict and so may not be the candidate's.

Why these files: the known ways agents forge a repository's test verdict go through them: editing
the failing test, a ``conftest.py`` hook that rewrites outcomes, test configuration that skips or
deselects (``addopts``, ``pytest.ini``), a plugin registered through entry points, ``.pth`` files
and ``sitecustomize``/``usercustomize`` modules that run at interpreter start, compiled files
planted to stand in for a test module, and ``.git`` (the history). :func:`classify` names the
category of a path; every file the task's test patch touches is protected as well.

``pyproject.toml`` and ``setup.cfg`` hold much more than test configuration and an honest fix may
edit them (a dependency, a version): only their test sections count (``[tool.pytest]`` with
``[tool.pytest.ini_options]`` and ``[project.entry-points.pytest11]``; ``[tool:pytest]`` and the
``pytest11`` entry points of ``setup.cfg``). When those changed the whole file is put back.

Two checks, both without following a link and without running anything in the tree:

- :func:`restore`, before anything runs: every protected path the candidate changed is reported as
  a :class:`ProtectedChange` and put back to the base, then the test patch's files are written
  (its result on the base, computed once per task; a file the test patch owns loses the
  candidate's edits to it, and one the candidate already made exactly as the test patch does is
  not a change). Files put back are hardlinks of the base again.
- :func:`fingerprint` after that, and :func:`changed_since` after the run: a content hash of every
  protected file in the tree, and what was added (a new ``conftest.py`` or ``.pth`` anywhere),
  changed or removed since. Compiled files and ``.pytest_cache`` are left out there: a test run
  writes them itself.
"""

from __future__ import annotations

import configparser
import hashlib
import json
import os
import stat
import tomllib
from pathlib import Path
from typing import Iterable, Literal

from pydantic import BaseModel, ConfigDict

from oracle.repo import _fs
from oracle.repo.base import BaseSnapshot, patched_by_test_patch
from oracle.repo.worktree import can_share_files, reference

Category = Literal["test_file", "conftest", "test_config", "site_hook", "git", "bytecode"]
Change = Literal["added", "modified", "deleted"]

TEST_CONFIG_FILES = frozenset({"pytest.ini", ".pytest.ini", "pytest.toml", ".pytest.toml", "tox.ini"})
SECTIONED_FILES = frozenset({"pyproject.toml", "setup.cfg"})
SITE_HOOKS = frozenset({"sitecustomize.py", "usercustomize.py"})
TEST_DIRS = frozenset({"tests", "test"})
_RUN_WRITES = frozenset({"__pycache__", ".pytest_cache"})
"""Directories a test run writes itself: not fingerprinted after the run."""


class ProtectedChange(BaseModel):
    """One protected path the candidate changed (restore) or that changed during the run (changed_since)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    path: str
    """Relative to the repository root."""
    category: Category
    change: Change


def classify(path: str) -> Category | None:
    """The protected category of the repository-relative ``path``, None when it is not protected
    (see module docstring). Pure: looks at the name only."""
    parts = [p for p in path.replace("\\", "/").split("/") if p not in ("", ".")]
    if not parts:
        return None
    if any(p.lower() == ".git" for p in parts):
        return "git"
    name = parts[-1]
    if "__pycache__" in parts[:-1] or name.endswith((".pyc", ".pyo")):
        return "bytecode"
    if name == "conftest.py":
        return "conftest"
    if name in SITE_HOOKS or name.endswith(".pth"):
        return "site_hook"
    if name in TEST_CONFIG_FILES or name in SECTIONED_FILES:
        return "test_config"
    if (name.startswith("test_") and name.endswith(".py")) or name.endswith("_test.py"):
        return "test_file"
    if any(p in TEST_DIRS for p in parts[:-1]):
        return "test_file"
    return None


def _category(path: str, owned: Iterable[str] | dict) -> Category | None:
    found = classify(path)
    if found is None and path in owned:
        return "test_file"
    return found


# -- test sections of pyproject.toml and setup.cfg --------------------------------------------------

def test_sections(name: str, data: bytes) -> str | None:
    """The test configuration inside ``pyproject.toml`` or ``setup.cfg``, canonical; None when the
    file cannot be read as such (then any byte change counts as a change of those sections)."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return None
    if name == "pyproject.toml":
        try:
            doc = tomllib.loads(text)
        except tomllib.TOMLDecodeError:
            return None
        plugins = _table(_table(doc, "project"), "entry-points").get("pytest11")
        what = {"tool.pytest": _table(doc, "tool").get("pytest"), "pytest11": plugins}
    else:
        parser = configparser.RawConfigParser(strict=False, interpolation=None)
        try:
            parser.read_string(text)
        except configparser.Error:
            return None
        pytest = dict(parser.items("tool:pytest")) if parser.has_section("tool:pytest") else None
        plugins = parser.get("options.entry_points", "pytest11", fallback="")
        what = {"tool:pytest": pytest, "pytest11": plugins, "pytest": parser.has_section("pytest")}
    return json.dumps(what, sort_keys=True, default=str)


def _table(doc: dict, key: str) -> dict:
    found = doc.get(key)
    return found if isinstance(found, dict) else {}


def _same_test_config(name: str, base: bytes, now: bytes) -> bool:
    if base == now:
        return True
    old, new = test_sections(name, base), test_sections(name, now)
    return old is not None and old == new


# -- restore ---------------------------------------------------------------------------------------

_CACHE_CAP = 64
"""Bases whose inode map a process keeps (a long-running service sees many)."""
_BASE_INODES: dict[str, dict[str, tuple[int, int]]] = {}


def _base_inodes(base: BaseSnapshot) -> dict[str, tuple[int, int]]:
    """(device, inode) of every base file, read once per snapshot: a tree file with the same inode
    is the base's file, unchanged (nobody writes those in place; see worktree.py)."""
    key = str(base.path)
    if key not in _BASE_INODES:
        if len(_BASE_INODES) >= _CACHE_CAP:
            _BASE_INODES.pop(next(iter(_BASE_INODES)))
        root = os.fspath(base.path) + "/"
        found = {}
        for rel in base.listing.files:
            st = os.lstat(root + rel)
            found[rel] = (st.st_dev, st.st_ino)
        _BASE_INODES[key] = found
    return _BASE_INODES[key]


def _tree_entries(tree: Path) -> dict[str, os.DirEntry[str]]:
    """Every entry of the tree but directories (a directory only where it stands at a protected
    file's name), by relative path."""
    return {rel: entry for rel, entry in _fs.walk(tree)}


def restore(tree: str | Path, base: BaseSnapshot, test_patch: str | None,
            extra: Iterable[str] = ()) -> list[ProtectedChange]:
    """Put the protected surface of ``tree`` back to the base plus the test patch, and report every
    protected path the candidate had changed (see module docstring). Run it after the candidate's
    patch and before anything runs in the tree. ``extra``: more repository paths protected as test
    files (the files a custom test command names: its runner script). ``RepositoryError``
    (``task.test_patch``) when the test patch does not apply to the base."""
    tree = Path(tree)
    patched = patched_by_test_patch(base, test_patch or "")
    owned = set(patched) | set(extra)
    listing = base.listing
    source = reference(base, tree)  # the copy of the base the tree's files are hardlinks of
    inodes = _base_inodes(source)
    entries = _tree_entries(tree)
    share = can_share_files() and os.stat(source.path).st_dev == os.stat(tree).st_dev
    base_root = source.path

    candidates = {p for p in listing.files if _category(p, owned)}
    candidates |= {p for p in listing.links if _category(p, owned)}
    candidates |= {rel for rel, entry in entries.items()
                   if not entry.is_dir(follow_symlinks=False) and _category(rel, owned)}
    candidates |= owned

    changes: list[ProtectedChange] = []
    for rel in sorted(candidates):
        category = _category(rel, owned)
        assert category is not None
        entry = entries.get(rel)
        if rel in patched and _is_final(tree, rel, entry, patched[rel]):
            continue  # already what the test patch makes of it (a second restore, the same new test)
        change = _change(tree, rel, entry, listing, inodes, base_root)
        if change is not None:
            changes.append(ProtectedChange(path=rel, category=category, change=change))
        if rel in patched:
            final = patched[rel]
            if final is None:
                _fs.remove(tree, rel)
            else:
                _fs.write_file(tree, rel, final[0], final[1], replace=True)
        elif change is not None:
            _put_back(tree, rel, listing, base_root, share)
    return changes


def _change(tree: Path, rel: str, entry: os.DirEntry[str] | None, listing, inodes: dict[str, tuple[int, int]],
            base_root: Path) -> Change | None:
    in_base = rel in listing.files or rel in listing.links
    if entry is None:
        return "deleted" if in_base else None
    if not in_base:
        return "added"
    st = entry.stat(follow_symlinks=False)
    if rel in listing.links:
        if stat.S_ISLNK(st.st_mode) and os.readlink(entry.path) == listing.links[rel]:
            return None
        return "modified"
    if not stat.S_ISREG(st.st_mode):
        return "modified"
    if inodes.get(rel) == (st.st_dev, st.st_ino):
        return None
    now = _fs.read_entry(tree, rel)
    old = (base_root / rel).read_bytes()
    if now is None or now[0] != "file":
        return "modified"
    name = rel.rsplit("/", 1)[-1]
    if name in SECTIONED_FILES and not _in_git(rel):
        return None if _same_test_config(name, old, now[1]) else "modified"
    return None if now[1] == old else "modified"


def _is_final(tree: Path, rel: str, entry: os.DirEntry[str] | None, final: tuple[bytes, int] | None) -> bool:
    if entry is None or final is None:
        return entry is None and final is None
    if not entry.is_file(follow_symlinks=False):
        return False
    now = _fs.read_entry(tree, rel)
    return now is not None and now[0] == "file" and now[1] == final[0]


def _in_git(rel: str) -> bool:
    return rel == ".git" or rel.startswith(".git/")


def _put_back(tree: Path, rel: str, listing, base_root: Path, share: bool) -> None:
    """``rel`` as the base has it (a hardlink of the base's file when trees share files), or removed."""
    if rel in listing.links:
        _fs.symlink(tree, rel, listing.links[rel], replace=True)
    elif rel in listing.files:
        if share and not (_in_git(rel) and not rel.startswith(".git/objects/")):
            _fs.link_file(tree, rel, base_root / rel, replace=True)
        else:
            _fs.write_file(tree, rel, (base_root / rel).read_bytes(), listing.files[rel], replace=True)
    else:
        _fs.remove(tree, rel)


# -- after the run ---------------------------------------------------------------------------------

_SEALED_HASHES: dict[tuple[int, int, int, int], str] = {}


def _hash(entry: os.DirEntry[str]) -> str:
    """sha256 of a file's content. A file no one but root can write (root-owned, not group- or
    world-writable, while runs drop root) is hashed once per (device, inode, size, mtime): the
    oracle never writes a file in place (worktree.py), so only a new inode has new content. Not
    ctime: every new tree's hardlink changes it."""
    st = entry.stat(follow_symlinks=False)
    if stat.S_ISLNK(st.st_mode):
        return "link:" + os.readlink(entry.path)
    if not stat.S_ISREG(st.st_mode):
        return "other:" + oct(stat.S_IFMT(st.st_mode))
    sealed = os.geteuid() == 0 and st.st_uid == 0 and not st.st_mode & 0o022
    key = (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)
    if sealed and key in _SEALED_HASHES:
        return _SEALED_HASHES[key]
    parent, name = os.path.split(entry.path)
    fd = os.open(parent, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    try:
        digest = hashlib.sha256(_fs.read_at(fd, name)).hexdigest()
    finally:
        os.close(fd)
    if sealed:
        if len(_SEALED_HASHES) > _CACHE_CAP * 1000:
            _SEALED_HASHES.clear()
        _SEALED_HASHES[key] = digest
    return digest


def fingerprint(tree: str | Path, extra: Iterable[str] = ()) -> dict[str, str]:
    """Path -> content hash of every protected file in ``tree`` now (links: their target), plus the
    paths in ``extra`` (the test patch's files). Take it right after :func:`restore`."""
    owned = set(extra)
    out = {}
    for rel, entry in _fs.walk(tree, skip_dir=lambda rel: rel.rsplit("/", 1)[-1] in _RUN_WRITES):
        if entry.is_dir(follow_symlinks=False):
            continue
        category = _category(rel, owned)
        if category is None or category == "bytecode":
            continue
        out[rel] = _hash(entry)
    return out


def changed_since(tree: str | Path, before: dict[str, str], extra: Iterable[str] = ()) -> list[ProtectedChange]:
    """What changed in ``tree``'s protected surface since :func:`fingerprint` gave ``before``:
    files added (a new ``conftest.py``, a ``.pth`` anywhere), modified or removed."""
    owned = set(extra)
    now = fingerprint(tree, owned)
    changes = []
    for rel in sorted(set(before) | set(now)):
        if before.get(rel) == now.get(rel):
            continue
        change: Change = "added" if rel not in before else "deleted" if rel not in now else "modified"
        category = _category(rel, owned)
        changes.append(ProtectedChange(path=rel, category=category or "test_file", change=change))
    return changes
