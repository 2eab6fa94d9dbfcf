"""The base snapshot: a task's repository at its base commit, extracted once, shared read-only.

Why it looks like this:
- **No history past the base.** Agents have read the fix from later commits (``git log --all``,
  ``git show <sha>``, a stash, the reflog, a packed object). The snapshot's ``.git`` is new: it
  holds exactly the objects of the base commit's tree (copied with ``git pack-objects`` from an
  explicit object list, so no other object of the source travels), one new commit of that tree
  with no parent, one branch ``main``, no remote, tag, reflog, stash or hook. Tools that want a
  repository (``git status``, setuptools-scm) find one; nothing reachable in it says what came later.
- **Once per commit.** An entry is named by the full commit hash (and the layout), which fixes its
  content whatever the source: a local clone and a bundle of the same repository share it. A
  bundle's (identity, commit) is remembered once it has been read, so a cached bundle task costs a
  ``stat``, not an unbundle.
- **Atomic and safe to share**, as the environment cache (oracle/sandbox/envcache.py) is: built in
  a temporary directory beside the entries under a per-entry ``flock``, renamed into place; a
  reader sees a complete entry or none, and a second builder waits and reuses the first one's.
- **Owned by the oracle's user, world-readable, writable by no one else** (directories 0755, files
  0644 or 0755): candidate trees hardlink its files (worktree.py), so the sandbox's uid can read
  them and never write them.

Entry layout: ``<root>/<commit>-v<LAYOUT>/`` with ``manifest.json``, ``listing.json`` (every
directory, file and link, for building trees without walking) and ``tree/`` (the snapshot).

``subdir``: the snapshot is always the whole repository: patches and the test patch name paths
from the repository root (as ``git diff`` writes them), and the protected surface is the whole
repository's. ``subdir`` is only where the tests run (their cwd and the root of their node ids,
:attr:`BaseSnapshot.workdir`); it is checked to be a directory at the commit.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import stat
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from oracle._internal.file_lock import FileLock
from oracle.errors import RepositoryError
from oracle.repo import _fs
from oracle.repo._git import message, run_git
from oracle.repo.patching import apply_to_copy

SHARED_CACHE = Path("/var/cache/oracle-sandbox/repositories")
"""Beside the environment cache's shared root (``/var/cache/oracle-sandbox/environments``)."""
LAYOUT = 2
"""Bumped when an entry's layout changes: part of its name, so an old entry is never misread."""
BRANCH = "main"
_HEX = re.compile(r"[0-9a-f]{4,40}")
_FIELD = {"path": "task.repository.path", "bundle": "task.repository.bundle"}


def default_root() -> Path:
    """Where snapshots live when no ``cache_root`` is given: as the environment cache chooses its
    root (shared when the oracle runs as root and drops privileges for runs, else the user's cache)."""
    if os.geteuid() == 0:
        return SHARED_CACHE
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "oracle" / "repositories"


@dataclass(frozen=True)
class Listing:
    """Everything in a snapshot's tree (``.git`` included), relative paths, parents before children."""

    dirs: tuple[str, ...]
    files: dict[str, int]
    """Path -> permission bits (0644 or 0755)."""
    links: dict[str, str]
    """Path -> link target, as the repository has it."""


@dataclass(frozen=True)
class BaseSnapshot:
    """One extracted base commit (see module docstring)."""

    path: Path
    """The snapshot's tree: the repository's files and its new ``.git``."""
    commit: str
    """The base commit's full hash in the source repository."""
    file_count: int
    """Files and links in the tree, ``.git`` aside."""
    tree_id: str = ""
    """The git tree hash of the base commit (the same in the snapshot's one commit)."""
    subdir: str | None = None
    reused: bool = False
    """True when the entry was already there (nothing was extracted by this call)."""
    seconds: float = 0.0
    _listing: dict = field(default_factory=dict, repr=False, compare=False)

    @property
    def workdir(self) -> Path:
        """Where the tests run: the tree, or its ``subdir``."""
        return self.path / self.subdir if self.subdir else self.path

    @property
    def listing(self) -> Listing:
        if "v" not in self._listing:
            self._listing["v"] = _read_listing(self.path.parent / "listing.json")
        return self._listing["v"]

    def with_test_patch(self, test_patch: str | None) -> dict[str, bytes | None]:
        """The content of every file the test patch touches, after it is applied to the base
        (None: the patch deletes it). Computed once per test patch. ``RepositoryError`` naming
        ``task.test_patch`` when it does not apply to the base."""
        return {path: (None if entry is None else entry[0])
                for path, entry in patched_by_test_patch(self, test_patch or "").items()}


def snapshot(source_path: str | None, bundle: str | None, commit: str, *, cache_root: Path | None = None,
             subdir: str | None = None) -> BaseSnapshot:
    """The base snapshot of ``commit`` in the repository at ``source_path`` or in the ``bundle``
    file (exactly one), extracted now unless it already is. Errors are ``RepositoryError`` naming
    the field: not a repository, an unreadable bundle, a commit that is not in it, a ``subdir``
    that is not a directory at that commit."""
    started = time.monotonic()
    if (source_path is None) == (bundle is None):
        raise RepositoryError("task.repository: give exactly one of path and bundle")
    wanted = commit.strip().lower() if isinstance(commit, str) else ""
    if not _HEX.fullmatch(wanted):
        raise RepositoryError(f"task.repository.commit: {commit!r} is not a commit hash (4 to 40 hex digits)")
    root = Path(cache_root) if cache_root is not None else default_root()
    _prepare_root(root)
    if source_path is not None:
        entry = _from_repository(Path(source_path), wanted, root)
    else:
        entry = _from_bundle(Path(bundle), wanted, root)  # type: ignore[arg-type]
    snap, reused = entry
    if subdir:
        _check_subdir(snap.path, subdir, snap.commit)
    return BaseSnapshot(path=snap.path, commit=snap.commit, file_count=snap.file_count, tree_id=snap.tree_id,
                        subdir=subdir or None, reused=reused, seconds=time.monotonic() - started)


# -- sources -------------------------------------------------------------------------------------

def _from_repository(path: Path, wanted: str, root: Path) -> tuple[BaseSnapshot, bool]:
    where = _FIELD["path"]
    if not path.is_dir():
        raise RepositoryError(f"{where}: {path} is not a directory on this machine (a task evaluated elsewhere, "
                              "on another machine or a Ray worker, should give task.repository.bundle instead: "
                              "one file, `git bundle create FILE --all`, that travels with the task)")
    probe = run_git(["rev-parse", "--git-dir"], cwd=path)
    if probe.returncode != 0:
        raise RepositoryError(f"{where}: {path} is not a git repository ({message(probe)})")
    git_dir = (path / probe.stdout.decode().strip()).resolve()
    full = _resolve(git_dir, wanted, str(path))
    return _ensure(root, full, git_dir, source=str(path.resolve()))


def _from_bundle(bundle: Path, wanted: str, root: Path) -> tuple[BaseSnapshot, bool]:
    where = _FIELD["bundle"]
    try:
        st = os.stat(bundle)
    except OSError as exc:
        raise RepositoryError(f"{where}: {bundle} cannot be read ({exc.strerror})") from None
    if not stat.S_ISREG(st.st_mode):
        raise RepositoryError(f"{where}: {bundle} is not a file")
    identity = f"{os.path.realpath(bundle)}\0{st.st_dev}\0{st.st_ino}\0{st.st_size}\0{st.st_mtime_ns}\0{wanted}"
    memo = root / ".bundles" / hashlib.sha256(identity.encode()).hexdigest()[:40]
    try:
        full = memo.read_text().strip()
    except OSError:
        full = ""
    if _HEX.fullmatch(full) and len(full) == 40:
        found = _read_entry(root / _entry_name(full))
        if found is not None:
            return found, True
    scratch = Path(tempfile.mkdtemp(prefix=".unbundle-", dir=root))
    try:
        src = scratch / "src.git"
        made = run_git(["init", "-q", "--bare", "--template=", str(src)])
        if made.returncode != 0:
            raise RepositoryError(f"{where}: cannot prepare a repository to read {bundle} into ({message(made)})")
        read = run_git(["bundle", "unbundle", str(Path(bundle).resolve())], git_dir=src)
        if read.returncode != 0:
            raise RepositoryError(f"{where}: {bundle} cannot be read as a git bundle ({message(read)})")
        full = _resolve(src, wanted, str(bundle))
        result = _ensure(root, full, src, source=str(Path(bundle).resolve()))
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    memo.parent.mkdir(mode=0o755, exist_ok=True)
    _write_atomic(memo, full + "\n")
    return result


def _resolve(git_dir: Path, wanted: str, where: str) -> str:
    """The full hash of commit ``wanted`` in ``git_dir``, or the error naming the commit field."""
    found = run_git(["rev-parse", "--verify", "--quiet", f"{wanted}^{{commit}}"], git_dir=git_dir)
    full = found.stdout.decode().strip()
    if found.returncode != 0 or not _HEX.fullmatch(full):
        why = message(found)
        raise RepositoryError(f"task.repository.commit: {wanted} is not a commit in {where}"
                              + (f" ({why})" if why else ""))
    return full


def _check_subdir(tree: Path, subdir: str, commit: str) -> None:
    try:
        st = _fs.lstat(tree, subdir)
    except (_fs.UnsafePath, _fs.LinkInPath) as exc:
        raise RepositoryError(f"task.repository.subdir: {exc}") from None
    if st is None or not stat.S_ISDIR(st.st_mode):
        raise RepositoryError(f"task.repository.subdir: {subdir!r} is not a directory at commit {commit[:12]}")


# -- the cache -----------------------------------------------------------------------------------

def _entry_name(full: str) -> str:
    return f"{full}-v{LAYOUT}"


def _ensure(root: Path, full: str, git_dir: Path, *, source: str) -> tuple[BaseSnapshot, bool]:
    entry = root / _entry_name(full)
    found = _read_entry(entry)
    if found is not None:
        return found, True
    with _lock(root / ".locks" / f"{entry.name}.lock"):
        found = _read_entry(entry)  # another builder finished while we waited
        if found is not None:
            return found, True
        for stale in root.glob(f".build-{entry.name}-*"):  # a crashed build of this entry: we hold its lock
            shutil.rmtree(stale, ignore_errors=True)
        tmp = Path(tempfile.mkdtemp(prefix=f".build-{entry.name}-", dir=root))
        try:
            _build(git_dir, full, tmp, source)
            os.chmod(tmp, 0o755)
            os.rename(tmp, entry)
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
    built = _read_entry(entry)
    if built is None:
        raise RepositoryError(f"task.repository: the snapshot {entry} vanished right after it was built")
    return built, False


def _build(src: Path, full: str, entry: Path, source: str) -> None:
    """Extract ``full`` from the repository ``src`` into ``entry/tree`` with a new one-commit ``.git``."""
    tree_id = _git_ok(["rev-parse", "--verify", f"{full}^{{tree}}"], src)
    date = _git_ok(["log", "-1", "--format=%ct", full], src)
    tree = entry / "tree"
    tree.mkdir()
    _git_ok(["init", "-q", "--template=", "-b", BRANCH, str(tree)], None)
    new_git = tree / ".git"
    objects = run_git(["rev-list", "--objects", tree_id], git_dir=src)
    if objects.returncode != 0:
        raise RepositoryError(f"task.repository: cannot list the objects of {full[:12]} ({message(objects)})")
    # no delta search: the pack is read by few and made once per commit, where time counts more than size
    packed = run_git(["pack-objects", "-q", "--window=0", str(new_git / "objects" / "pack" / "pack")], git_dir=src,
                     input=objects.stdout)
    if packed.returncode != 0:
        raise RepositoryError(f"task.repository: cannot copy the objects of {full[:12]} ({message(packed)})")
    when = f"{int(date)} +0000" if date.isdigit() else "0 +0000"
    who = {"GIT_AUTHOR_NAME": "oracle-router", "GIT_AUTHOR_EMAIL": "base@oracle-router.invalid",
           "GIT_COMMITTER_NAME": "oracle-router", "GIT_COMMITTER_EMAIL": "base@oracle-router.invalid",
           "GIT_AUTHOR_DATE": when, "GIT_COMMITTER_DATE": when}
    made = run_git(["commit-tree", tree_id, "-m", f"base snapshot of {full}"], git_dir=new_git, extra_env=who)
    if made.returncode != 0:
        raise RepositoryError(f"task.repository: cannot commit the snapshot of {full[:12]} ({message(made)})")
    new_commit = made.stdout.decode().strip()
    _git_ok(["update-ref", f"refs/heads/{BRANCH}", new_commit], new_git)
    # Trees hardlink or copy these files (mtimes kept): a new link changes a file's ctime, a copy
    # its inode, neither its content, so git in a tree compares size and mtime only (no re-hash).
    _git_ok(["config", "core.trustctime", "false"], new_git)
    _git_ok(["config", "core.checkStat", "minimal"], new_git)  # a staged or copied tree has new inodes
    _git_ok(["read-tree", "--reset", "-u", tree_id], new_git, work_tree=tree)
    shutil.rmtree(new_git / "logs", ignore_errors=True)
    _world_readable(entry)
    listing = _listing_of(tree)
    file_count = sum(1 for p in (*listing.files, *listing.links) if not _in_git(p))
    manifest = {"layout": LAYOUT, "commit": full, "tree_id": tree_id, "snapshot_commit": new_commit,
                "file_count": file_count, "source": source,
                "built": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    _write_atomic(entry / "listing.json", json.dumps({"dirs": list(listing.dirs), "files": listing.files,
                                                      "links": listing.links}, separators=(",", ":")))
    _write_atomic(entry / "manifest.json", json.dumps(manifest, indent=1, sort_keys=True) + "\n")


def _git_ok(args: list[str], git_dir: Path | None, *, work_tree: Path | None = None) -> str:
    done = run_git(args, git_dir=git_dir, work_tree=work_tree)
    if done.returncode != 0:
        raise RepositoryError(f"task.repository: git {args[0]} failed ({message(done)})")
    return done.stdout.decode().strip()


def _in_git(rel: str) -> bool:
    return rel == ".git" or rel.startswith(".git/")


def _listing_of(tree: Path) -> Listing:
    dirs, files, links = [], {}, {}
    for rel, entry in _fs.walk(tree):
        if entry.is_symlink():
            links[rel] = os.readlink(entry.path)
        elif entry.is_dir(follow_symlinks=False):
            dirs.append(rel)
        elif entry.is_file(follow_symlinks=False):
            files[rel] = stat.S_IMODE(entry.stat(follow_symlinks=False).st_mode)
    return Listing(dirs=tuple(dirs), files=dict(sorted(files.items())), links=dict(sorted(links.items())))


_CACHE_CAP = 64
"""Listings and test-patch results a process keeps (a long-running service sees many tasks)."""
_LISTINGS: dict[str, Listing] = {}


def _read_listing(path: Path) -> Listing:
    key = str(path)
    if key not in _LISTINGS:
        if len(_LISTINGS) >= _CACHE_CAP:
            _LISTINGS.pop(next(iter(_LISTINGS)))
        raw = json.loads(path.read_text())
        _LISTINGS[key] = Listing(dirs=tuple(raw["dirs"]), files=dict(raw["files"]), links=dict(raw["links"]))
    return _LISTINGS[key]


def _read_entry(entry: Path) -> BaseSnapshot | None:
    try:
        manifest = json.loads((entry / "manifest.json").read_text())
    except (OSError, ValueError):
        return None
    if manifest.get("layout") != LAYOUT or not (entry / "tree").is_dir():
        return None
    return BaseSnapshot(path=entry / "tree", commit=str(manifest["commit"]), file_count=int(manifest["file_count"]),
                        tree_id=str(manifest.get("tree_id", "")))


def _prepare_root(root: Path) -> None:
    try:
        missing = [p for p in (root, *root.parents) if not p.exists()]
        root.mkdir(parents=True, exist_ok=True, mode=0o755)
        for made in missing:  # whatever the umask: the sandbox user must be able to enter them
            os.chmod(made, 0o755)
        (root / ".locks").mkdir(exist_ok=True, mode=0o700)
    except OSError as exc:
        raise RepositoryError(f"task.repository: the snapshot cache {root} cannot be created: {exc}") from None


def _world_readable(top: Path) -> None:
    """Directories 0755, files 0644 (0755 when executable): the sandbox user reads, nobody else writes."""
    for dirpath, _dirnames, filenames in os.walk(top):
        os.chmod(dirpath, 0o755)
        for name in filenames:
            path = os.path.join(dirpath, name)
            mode = os.lstat(path).st_mode
            if stat.S_ISREG(mode):
                os.chmod(path, 0o755 if mode & stat.S_IXUSR else 0o644)


def _write_atomic(path: Path, text: str) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{os.urandom(4).hex()}")
    tmp.write_text(text)
    os.chmod(tmp, 0o644)
    os.rename(tmp, path)


def _lock(path: Path, timeout_s: float = 900.0) -> FileLock:
    """The lock of one cache entry's extraction."""
    return FileLock(path, timeout_s, lambda p, t: RepositoryError(
        f"task.repository: another extraction held {p} for more than {t:.0f} s"))


def patched_by_test_patch(base: BaseSnapshot, test_patch: str) -> dict[str, tuple[bytes, int] | None]:
    """Path -> (content, mode) after ``test_patch`` is applied to the base (None: deleted); cached."""
    key = (str(base.path), hashlib.sha256(test_patch.encode("utf-8", "surrogateescape")).hexdigest())
    if key not in _PATCHED:
        if len(_PATCHED) >= _CACHE_CAP:
            _PATCHED.pop(next(iter(_PATCHED)))
        _PATCHED[key] = apply_to_copy(base.path, test_patch, field="task.test_patch")
    return _PATCHED[key]


_PATCHED: dict[tuple[str, str], dict[str, tuple[bytes, int] | None]] = {}
