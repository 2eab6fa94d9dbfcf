"""Creating files without following a link planted where the file should be.

Why: the store, release, lock and report files are written in directories other people may
write to as well (a shared ``.oracle/``, a batch output folder). ``open(path, "w")`` follows a
symlink left at ``path`` and writes wherever it points; ``O_EXCL | O_NOFOLLOW`` creates the file
itself or fails, so a planted name is refused instead of written through.
"""

from __future__ import annotations

import os
from pathlib import Path

_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)


def create_exclusive(path: str | Path, mode: int = 0o644) -> int:
    """A new file's descriptor, open for writing; ``FileExistsError`` when anything (a file, a
    directory, a symlink, dangling or not) already has the name."""
    return os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW | _CLOEXEC, mode)


def open_no_follow(path: str | Path, flags: int, mode: int = 0o644) -> int:
    """``os.open`` that refuses (``OSError`` ELOOP) when the last component of ``path`` is a symlink."""
    return os.open(path, flags | _NOFOLLOW | _CLOEXEC, mode)


def refuse_symlink(path: str | Path, what: str) -> None:
    """``ValueError`` naming ``what`` when ``path`` is a symlink (checked before opening by name
    where the opener, such as SQLite, cannot be given ``O_NOFOLLOW``)."""
    if Path(path).is_symlink():
        raise ValueError(f"{what} {path}: is a symbolic link; refusing to follow it (give the real path)")


def write_atomic(path: str | Path, data: bytes | str) -> None:
    """Replace ``path`` with ``data`` in one step: written to a fresh temporary file created with
    ``O_EXCL | O_NOFOLLOW`` beside it (a link planted at a guessable temporary name is never written
    through), then renamed over ``path`` (a rename replaces a link at ``path`` itself, never its
    target). Readers see the old file or the new one, never a part."""
    target = Path(path)
    raw = data.encode("utf-8") if isinstance(data, str) else data
    for attempt in range(100):
        tmp = target.with_name(f".{target.name}.{os.getpid()}.{os.urandom(4).hex()}.tmp")
        try:
            fd = create_exclusive(tmp)
        except FileExistsError:
            continue
        break
    else:  # pragma: no cover - 100 collisions of 32 random bits
        raise FileExistsError(f"{target}: cannot create a temporary file beside it")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(raw)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, target)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
