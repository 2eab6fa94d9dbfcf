"""Reading and writing inside a candidate's tree without ever following a link.

Why: a candidate's tree may hold symbolic links (the repository's own, or one a candidate's run
left: to ``/``, to the base snapshot, to another candidate's tree). Every host-side step that
touches a tree (patching, restoring, hashing, removing) goes through these helpers, which open
each path one component at a time from the tree's root with ``O_NOFOLLOW | O_DIRECTORY``: a link
anywhere on the way is reported (:class:`LinkInPath`), never entered. Files are replaced by a new
file renamed into place, never written in place, so a file shared with the base (a hardlink) keeps
its content.
"""

from __future__ import annotations

import os
import shutil
import stat
from pathlib import Path
from typing import Iterator

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_READ_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | getattr(os, "O_NOATIME", 0)


class UnsafePath(ValueError):
    """A path that may not be used in a tree (absolute, ``..``, empty, NUL); the message says why."""


class LinkInPath(ValueError):
    """A component of the path is a symbolic link (``link``, relative to the tree)."""

    def __init__(self, path: str, link: str) -> None:
        self.path, self.link = path, link
        super().__init__(f"{path}: {link} is a symbolic link" if link != path else f"{path} is a symbolic link")


def parts_of(rel: str) -> list[str]:
    """The components of a tree-relative path, or :class:`UnsafePath`."""
    if not rel or "\0" in rel:
        raise UnsafePath(f"{rel!r}: an empty path or a NUL character")
    if rel.startswith("/"):
        raise UnsafePath(f"{rel}: an absolute path")
    parts = rel.split("/")
    if ".." in parts:
        raise UnsafePath(f"{rel}: a path with '..'")
    parts = [p for p in parts if p not in ("", ".")]
    if not parts:
        raise UnsafePath(f"{rel!r}: names the tree itself")
    return parts


def _open_dir(top: int, name: str) -> int:
    return os.open(name, _DIR_FLAGS, dir_fd=top)


def open_parent(tree: str | Path, rel: str, *, create: bool = False, replace: bool = False) -> tuple[int, str]:
    """A descriptor of the directory holding ``rel`` and its last component. ``create`` makes
    missing directories (0755); ``replace`` also removes a link or a file standing where a
    directory must be (restoring the tree's own layout). Without ``replace`` a link on the way is
    :class:`LinkInPath`, a file on the way ``NotADirectoryError``, a missing one ``FileNotFoundError``."""
    parts = parts_of(rel)
    fd = os.open(tree, _DIR_FLAGS)
    try:
        for i, name in enumerate(parts[:-1]):
            try:
                st = os.stat(name, dir_fd=fd, follow_symlinks=False)
            except FileNotFoundError:
                if not create:
                    raise
                os.mkdir(name, 0o755, dir_fd=fd)
                st = os.stat(name, dir_fd=fd, follow_symlinks=False)
            if not stat.S_ISDIR(st.st_mode):
                if not replace:
                    if stat.S_ISLNK(st.st_mode):
                        raise LinkInPath(rel, "/".join(parts[: i + 1]))
                    raise NotADirectoryError(f"{rel}: {'/'.join(parts[: i + 1])} is not a directory")
                os.unlink(name, dir_fd=fd)
                os.mkdir(name, 0o755, dir_fd=fd)
            child = _open_dir(fd, name)
            os.close(fd)
            fd = child
    except BaseException:
        os.close(fd)
        raise
    return fd, parts[-1]


def lstat(tree: str | Path, rel: str) -> os.stat_result | None:
    """``lstat`` of ``rel`` (the entry itself, a link included), None when it or a parent is missing.
    A link on the way is :class:`LinkInPath`."""
    try:
        fd, name = open_parent(tree, rel)
    except (FileNotFoundError, NotADirectoryError):
        return None
    try:
        return os.stat(name, dir_fd=fd, follow_symlinks=False)
    except FileNotFoundError:
        return None
    finally:
        os.close(fd)


def read_entry(tree: str | Path, rel: str) -> tuple[str, bytes, int] | None:
    """What is at ``rel``: ``("file", content, mode)``, ``("link", target, 0)`` or ``("dir"|"other", b"", 0)``;
    None when missing. A link on the way (not at ``rel`` itself) is :class:`LinkInPath`."""
    try:
        fd, name = open_parent(tree, rel)
    except (FileNotFoundError, NotADirectoryError):
        return None
    try:
        try:
            st = os.stat(name, dir_fd=fd, follow_symlinks=False)
        except FileNotFoundError:
            return None
        if stat.S_ISLNK(st.st_mode):
            return "link", os.fsencode(os.readlink(name, dir_fd=fd)), 0
        if stat.S_ISDIR(st.st_mode):
            return "dir", b"", 0
        if not stat.S_ISREG(st.st_mode):
            return "other", b"", 0
        return "file", read_at(fd, name), stat.S_IMODE(st.st_mode)
    finally:
        os.close(fd)


def read_at(dir_fd: int, name: str) -> bytes:
    """A regular file's bytes, opened without following a link (a fifo would be refused by the
    caller's ``lstat`` first; ``O_NONBLOCK`` keeps a race from hanging on one)."""
    fd = os.open(name, _READ_FLAGS | os.O_NONBLOCK, dir_fd=dir_fd)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return b""
        chunks = []
        while chunk := os.read(fd, 1 << 20):
            chunks.append(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)


def _tmp_name(name: str) -> str:
    return f".{name[:40]}.oracle-{os.getpid()}-{os.urandom(4).hex()}.tmp"


def _clear_for_file(dir_fd: int, name: str) -> None:
    """Remove a directory standing where a file goes (a file or link is replaced by the rename)."""
    try:
        st = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    except FileNotFoundError:
        return
    if stat.S_ISDIR(st.st_mode):
        shutil.rmtree(name, dir_fd=dir_fd)


def write_file(tree: str | Path, rel: str, data: bytes, mode: int = 0o644, *, replace: bool = False) -> None:
    """Put ``data`` at ``rel`` as a new file (a fresh inode renamed over the old name: a hardlink
    shared with the base is left as it was, a link at ``rel`` is replaced, not written through).
    ``replace``: as in :func:`open_parent`, and a directory at ``rel`` is removed first."""
    fd, name = open_parent(tree, rel, create=True, replace=replace)
    try:
        if replace:
            _clear_for_file(fd, name)
        tmp = _tmp_name(name)
        out = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600, dir_fd=fd)
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(out, view):]
            os.fchmod(out, mode)
        finally:
            os.close(out)
        try:
            os.rename(tmp, name, src_dir_fd=fd, dst_dir_fd=fd)
        except BaseException:
            os.unlink(tmp, dir_fd=fd)
            raise
    finally:
        os.close(fd)


def link_file(tree: str | Path, rel: str, source: str | Path, *, replace: bool = False) -> None:
    """Put a hardlink of ``source`` (a base snapshot's file) at ``rel``, renamed into place like
    :func:`write_file`."""
    fd, name = open_parent(tree, rel, create=True, replace=replace)
    try:
        if replace:
            _clear_for_file(fd, name)
        tmp = _tmp_name(name)
        os.link(source, tmp, dst_dir_fd=fd, follow_symlinks=False)
        try:
            os.rename(tmp, name, src_dir_fd=fd, dst_dir_fd=fd)
        except BaseException:
            os.unlink(tmp, dir_fd=fd)
            raise
    finally:
        os.close(fd)


def symlink(tree: str | Path, rel: str, target: str, *, replace: bool = False) -> None:
    """Put a link to ``target`` at ``rel`` (a base snapshot's own link, restored as it was)."""
    fd, name = open_parent(tree, rel, create=True, replace=replace)
    try:
        if replace:
            _clear_for_file(fd, name)
        tmp = _tmp_name(name)
        os.symlink(target, tmp, dir_fd=fd)
        os.rename(tmp, name, src_dir_fd=fd, dst_dir_fd=fd)
    finally:
        os.close(fd)


def remove(tree: str | Path, rel: str) -> bool:
    """Remove whatever is at ``rel`` (a directory with all it holds; a link itself, never its
    target). False when nothing was there. A link on the way is :class:`LinkInPath`."""
    try:
        fd, name = open_parent(tree, rel)
    except (FileNotFoundError, NotADirectoryError):
        return False
    try:
        try:
            st = os.stat(name, dir_fd=fd, follow_symlinks=False)
        except FileNotFoundError:
            return False
        if stat.S_ISDIR(st.st_mode):
            shutil.rmtree(name, dir_fd=fd)
        else:
            os.unlink(name, dir_fd=fd)
        return True
    finally:
        os.close(fd)


def walk(tree: str | Path, *, skip_dir=None) -> Iterator[tuple[str, os.DirEntry[str]]]:
    """Every entry under ``tree`` as (relative path, entry), directories before what they hold,
    links reported and never entered. ``skip_dir(rel)`` true: that directory is reported but not
    entered."""
    todo = [("", os.fspath(tree))]
    while todo:
        prefix, path = todo.pop()
        try:
            with os.scandir(path) as entries:
                found = list(entries)
        except (FileNotFoundError, NotADirectoryError, PermissionError):
            continue
        for entry in found:
            rel = prefix + entry.name
            yield rel, entry
            if entry.is_dir(follow_symlinks=False) and not (skip_dir is not None and skip_dir(rel)):
                todo.append((rel + "/", entry.path))
