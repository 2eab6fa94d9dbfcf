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
"""

from __future__ import annotations

import errno
import fcntl
import os
import shutil
import stat
import tempfile
from pathlib import Path

from oracle.repo import _fs
from oracle.repo.base import BaseSnapshot

_FICLONE = 0x40049409
_NO_REFLINK: set[int] = set()


def can_share_files() -> bool:
    """Hardlinks to the base are safe only when runs do not run as the files' owner (see module docstring)."""
    return os.geteuid() == 0


def make_tree(base: BaseSnapshot, parent: str | Path, *, share: bool | None = None) -> Path:
    """A new working tree of ``base`` in a new directory under ``parent``. ``share``: hardlink the
    base's files (default: when :func:`can_share_files`), else copy them."""
    if share is None:
        share = can_share_files()
    tree = Path(tempfile.mkdtemp(prefix="tree-", dir=parent))
    try:
        os.chmod(tree, 0o755)
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
    except BaseException:
        destroy(tree)
        raise
    return tree


def _copy(src: str, dst: str, mode: int) -> None:
    """A private copy of ``src`` (a reflink when the filesystem has them, tried once per device)."""
    with open(src, "rb") as fin, open(dst, "xb") as fout:
        dev = os.fstat(fin.fileno()).st_dev
        if dev not in _NO_REFLINK:
            try:
                fcntl.ioctl(fout.fileno(), _FICLONE, fin.fileno())
                os.fchmod(fout.fileno(), mode)
                return
            except OSError as exc:
                if exc.errno in (errno.EOPNOTSUPP, errno.ENOTTY, errno.EXDEV, errno.EINVAL, errno.ENOSYS):
                    _NO_REFLINK.add(dev)
                else:
                    raise
        shutil.copyfileobj(fin, fout, 1 << 20)
        os.fchmod(fout.fileno(), mode)


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
