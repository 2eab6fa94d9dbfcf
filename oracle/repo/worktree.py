"""One working tree per candidate, made from the base snapshot in milliseconds, removed without
following a link.

Why a hardlink farm: the filesystem here (ext4) has no reflinks, and a copy costs a read and a
write per file. A tree whose files are hardlinks of the base snapshot's costs one ``link`` per
file and no data. It is safe because nobody writes those shared inodes in place: they belong to
the oracle's user (root when runs drop to a slot uid), mode 0644, so the sandbox's uid cannot open
them for writing; every host-side change (patching.py, protected.py) replaces a file by a new one
renamed into place. Directories are fresh (each tree has its own, so a candidate may add, rename
and delete entries once :func:`own_dirs` gives them to its uid). ``.git``'s objects are immutable
and shared as well; its other files (index, HEAD, config, refs) are copied.

When the oracle does not run as root the candidate would run as the files' owner and could
``chmod`` and write a shared inode; then every file is copied instead (a reflink where the
filesystem has them, else a plain copy).

Where trees live: directory operations dominate (a 2,000-file repository has hundreds of
directories), and on this project's ext4 disk a ``mkdir`` costs ~0.8 ms and an ``rmdir`` ~2.5 ms,
against a few microseconds on tmpfs. So :func:`default_parent` puts trees on ``/dev/shm`` when it
is a tmpfs, and a hardlink cannot cross filesystems: the first tree of a base on another
filesystem stages one copy of the base there (:func:`staged`, kept for the last few bases a
process used, removed at exit or by the next process once its owner is gone); every tree of it
is then a hardlink farm of that copy. Memory: one copy of the repository per staged base; a tree
adds only the files a candidate changed.

tmpfs is RAM, so :func:`choose_parent` puts a base's trees there only when it fits: the base's files
at most ``TMPFS_MAX_BYTES`` (256 MiB) and ``/dev/shm`` free for its staged copy plus room for trees
(``TREES_ROOM_BYTES`` and the base's size again); else on disk, beside the snapshot cache (the
same filesystem as the base: hardlinks of it, nothing staged). The verifier records which.
"""

from __future__ import annotations

import atexit
import dataclasses
import errno
import fcntl
import os
import shutil
import stat
import tempfile
import threading
from collections import OrderedDict
from pathlib import Path

from oracle.repo import _fs
from oracle.repo.base import BaseSnapshot

_FICLONE = 0x40049409
TMPFS_MAX_BYTES = 256 << 20
"""The largest base (its files' bytes) whose trees go on tmpfs (see module docstring)."""
TREES_ROOM_BYTES = 64 << 20
"""Free space on tmpfs kept for trees beyond the staged copy (directories, files candidates change)."""
_NO_REFLINK: set[tuple[int, int]] = set()
SHM_TREES = Path("/dev/shm/oracle-trees")
STAGED_KEEP = 4
"""Staged bases a process keeps (the oldest is removed when another is staged)."""
_STAGED: OrderedDict[tuple[str, int], BaseSnapshot] = OrderedDict()
_STAGE_LOCK = threading.Lock()


def default_parent() -> Path:
    """Where candidate trees go when the caller has no better place: ``/dev/shm/oracle-trees`` when
    ``/dev/shm`` is a writable tmpfs (see module docstring), else the system's temporary directory.
    Made 0711: the sandbox's uid may pass through it to its own tree, not list it."""
    try:
        if os.statvfs("/dev/shm").f_bavail > 0 and os.access("/dev/shm", os.W_OK) and _is_tmpfs("/dev/shm"):
            SHM_TREES.mkdir(mode=0o711, exist_ok=True)
            os.chmod(SHM_TREES, 0o711)
            return SHM_TREES
    except OSError:
        pass
    return Path(tempfile.gettempdir())


@dataclasses.dataclass(frozen=True)
class TreePlace:
    """Where a base's candidate trees go, and why (recorded in the result's provenance)."""

    parent: Path
    kind: str
    """``tmpfs`` or ``disk``."""
    reason: str
    base_bytes: int


_BASE_BYTES: dict[str, int] = {}


def base_bytes(base: BaseSnapshot) -> int:
    """The bytes of the base's files (``.git`` included), summed once per snapshot."""
    key = str(base.path)
    if key not in _BASE_BYTES:
        if len(_BASE_BYTES) >= 64:
            _BASE_BYTES.pop(next(iter(_BASE_BYTES)))
        root = os.fspath(base.path) + "/"
        _BASE_BYTES[key] = sum(os.lstat(root + rel).st_size for rel in base.listing.files)
    return _BASE_BYTES[key]


def choose_parent(base: BaseSnapshot, *, tmpfs_max_bytes: int | None = None) -> TreePlace:
    """tmpfs (:func:`default_parent`) when the base fits there, else a directory beside the
    snapshot cache (see module docstring). ``tmpfs_max_bytes``: default ``TMPFS_MAX_BYTES``."""
    limit = TMPFS_MAX_BYTES if tmpfs_max_bytes is None else tmpfs_max_bytes
    size = base_bytes(base)
    shm = default_parent()
    if shm != SHM_TREES:
        reason = "no writable tmpfs at /dev/shm"
    elif size > limit:
        reason = f"the base's files ({size >> 20} MiB) exceed the tmpfs limit ({limit >> 20} MiB)"
    else:
        try:
            vfs = os.statvfs(shm)
            free = vfs.f_bavail * vfs.f_frsize
        except OSError:
            free = 0
        with _STAGE_LOCK:
            staged_already = (str(base.path), os.stat(shm).st_dev) in _STAGED
        need = (0 if staged_already else size) + size + TREES_ROOM_BYTES
        if free >= need:
            return TreePlace(shm, "tmpfs", f"the base's files ({size >> 20} MiB) fit in tmpfs", size)
        reason = f"/dev/shm has {free >> 20} MiB free, its staged copy and trees need {need >> 20} MiB"
    return TreePlace(disk_parent(base), "disk", reason, size)


def disk_parent(base: BaseSnapshot) -> Path:
    """``.trees`` in the snapshot cache (the base's filesystem: trees hardlink the base itself) when
    the sandbox's uid may pass every directory above it, else the system's temporary directory."""
    root = base.path.parent.parent
    place = root / ".trees"
    try:
        place.mkdir(mode=0o711, exist_ok=True)
        os.chmod(place, 0o711)
        real = os.path.realpath(place)
        parent = os.path.dirname(real)
        while parent and parent != "/":
            if not os.stat(parent).st_mode & stat.S_IXOTH:
                return Path(tempfile.gettempdir())
            parent = os.path.dirname(parent)
        return place
    except OSError:
        return Path(tempfile.gettempdir())


def _is_tmpfs(path: str) -> bool:
    try:
        with open("/proc/self/mounts") as fh:
            return any(line.split()[1:3] == [path, "tmpfs"] for line in fh)
    except OSError:
        return False


def staged(base: BaseSnapshot, parent: str | Path) -> BaseSnapshot:
    """``base`` itself when ``parent`` is on its filesystem; else this process's copy of it on
    ``parent``'s filesystem, made now if needed (see module docstring)."""
    dev = os.stat(parent).st_dev
    if os.stat(base.path).st_dev == dev:
        return base
    key = (str(base.path), dev)
    with _STAGE_LOCK:
        found = _STAGED.get(key)
        if found is not None and found.path.is_dir():
            _STAGED.move_to_end(key)
            return found
        _sweep_staged(Path(parent))
        where = Path(tempfile.mkdtemp(prefix=f".staged-{os.getpid()}-", dir=parent))
        try:
            os.chmod(where, 0o755)
            _populate(base, where / "tree", share=False)
        except BaseException:
            destroy(where)
            raise
        copy = dataclasses.replace(base, path=where / "tree", _listing={"v": base.listing})
        _STAGED[key] = copy
        while len(_STAGED) > STAGED_KEEP:
            _old_key, old = _STAGED.popitem(last=False)
            destroy(old.path.parent)  # its trees keep their files: hardlinks outlive the name
        return copy


def reference(base: BaseSnapshot, tree: str | Path) -> BaseSnapshot:
    """The copy of ``base`` that ``tree``'s files are hardlinks of (``base`` itself, or its staged
    copy on the tree's filesystem when this process has one)."""
    dev = os.stat(tree).st_dev
    with _STAGE_LOCK:
        found = _STAGED.get((str(base.path), dev))
    return found if found is not None and found.path.is_dir() else base


def _sweep_staged(parent: Path) -> None:
    """Remove staged copies whose process is gone (a killed oracle's)."""
    for old in parent.glob(".staged-*-*"):
        try:
            pid = int(old.name.split("-")[1])
            os.kill(pid, 0)
        except ProcessLookupError:
            destroy(old)
        except (ValueError, PermissionError, OSError):
            continue


@atexit.register
def _unstage_all() -> None:
    with _STAGE_LOCK:
        while _STAGED:
            destroy(_STAGED.popitem()[1].path.parent)


def can_share_files() -> bool:
    """Hardlinks to the base are safe only when runs do not run as the files' owner (see module docstring)."""
    return os.geteuid() == 0


def make_tree(base: BaseSnapshot, parent: str | Path, *, share: bool | None = None) -> Path:
    """A new working tree of ``base`` in a new directory under ``parent``. ``share``: hardlink the
    base's files (default: when :func:`can_share_files`; from its staged copy when ``parent`` is on
    another filesystem), else copy them."""
    if share is None:
        share = can_share_files()
    for attempt in (1, 2):
        source = staged(base, parent) if share else base
        tree = Path(tempfile.mkdtemp(prefix="tree-", dir=parent))
        try:
            os.chmod(tree, 0o755)
            _populate(source, tree, share=share, made=True)
            return tree
        except FileNotFoundError:
            destroy(tree)
            if source is base or attempt == 2:
                raise
            # another thread staged more bases meanwhile and removed this copy: stage it again
        except BaseException:
            destroy(tree)
            raise
    raise AssertionError("unreachable")


def _populate(base: BaseSnapshot, tree: Path, *, share: bool, made: bool = False) -> None:
    """Fill ``tree`` (made here unless ``made``) with ``base``'s directories, files and links."""
    if not made:
        os.mkdir(tree, 0o755)
    listing = base.listing
    src_root, dst_root = os.fspath(base.path) + "/", os.fspath(tree) + "/"
    umask = os.umask(0o022)
    os.umask(umask)
    for rel in listing.dirs:
        os.mkdir(dst_root + rel, 0o755)
        if umask & 0o755:
            os.chmod(dst_root + rel, 0o755)
    link = os.link
    for rel, mode in listing.files.items():
        if share and not (rel.startswith(".git/") and not rel.startswith(".git/objects/")):
            link(src_root + rel, dst_root + rel, follow_symlinks=False)
        else:
            _copy(src_root + rel, dst_root + rel, mode)
    for rel, target in listing.links.items():
        os.symlink(target, dst_root + rel)


def _copy(src: str, dst: str, mode: int) -> None:
    """A private copy of ``src`` (a reflink when the filesystem has them, tried once per device)."""
    with open(src, "rb") as fin, open(dst, "xb") as fout:
        st = os.fstat(fin.fileno())
        cloned = False
        if (st.st_dev, os.fstat(fout.fileno()).st_dev) not in _NO_REFLINK:
            try:
                fcntl.ioctl(fout.fileno(), _FICLONE, fin.fileno())
                cloned = True
            except OSError as exc:
                if exc.errno not in (errno.EOPNOTSUPP, errno.ENOTTY, errno.EXDEV, errno.EINVAL, errno.ENOSYS):
                    raise
                _NO_REFLINK.add((st.st_dev, os.fstat(fout.fileno()).st_dev))
        if not cloned:
            shutil.copyfileobj(fin, fout, 1 << 20)
        os.fchmod(fout.fileno(), mode)
        # the same mtime as the base: git in the tree sees its index's stat data hold (no re-hash)
        os.utime(fout.fileno(), ns=(st.st_atime_ns, st.st_mtime_ns))


def own_dirs(tree: str | Path, uid: int, gid: int | None = None) -> None:
    """Give every directory of ``tree`` (itself included) to ``uid``, except ``.git`` and what it
    holds: the candidate's run may create, rename and remove entries, never write a shared file in
    place (files keep their owner) nor change the repository's ``.git``. Links are never followed.
    Call it after patching and restoring, right before the run."""
    gid = uid if gid is None else gid
    os.chown(tree, uid, gid, follow_symlinks=False)
    for rel, entry in _fs.walk(tree, skip_dir=lambda rel: rel == ".git"):
        if rel != ".git" and entry.is_dir(follow_symlinks=False):
            os.chown(entry.path, uid, gid, follow_symlinks=False)


def destroy(tree: str | Path) -> None:
    """Remove ``tree`` and all it holds. A link inside it is removed, never followed (``shutil.rmtree``'s
    descriptor-based walk); ``tree`` itself being a link removes only the link. A directory a
    candidate made unreadable to us (when we are not root) is opened up and removed."""
    path = os.fspath(tree)
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return
    if not stat.S_ISDIR(st.st_mode):
        os.unlink(path)
        return

    def opened_up(func, failed, exc_info) -> None:
        exc = exc_info[1]
        if isinstance(exc, FileNotFoundError):
            return
        if isinstance(exc, PermissionError) and os.path.isdir(failed) and not os.path.islink(failed):
            os.chmod(failed, 0o700)
            shutil.rmtree(failed, onerror=_ignore_missing)
            return
        if isinstance(exc, PermissionError) and func in (os.unlink, os.rmdir):
            parent = os.path.dirname(failed)
            if not os.path.islink(parent):
                os.chmod(parent, 0o700)
                func(failed)
                return
        raise exc

    shutil.rmtree(path, onerror=opened_up)
    if os.path.lexists(path):
        shutil.rmtree(path, onerror=_ignore_missing)


def _ignore_missing(func, failed, exc_info) -> None:
    if not isinstance(exc_info[1], FileNotFoundError):
        raise exc_info[1]
