"""A repository task's bundle travels with it to a Ray worker (issue 28: "a batch on another machine
or a Ray worker needs nothing else").

Why: a task names its bundle by a path, made absolute on the driver's machine; a worker on another
machine has no such file, or a different one there. So the driver reads each distinct bundle once
(:class:`Shipper`: its bytes put in Ray's object store, keyed by their sha256) and sends, with each
chunk, the path -> (sha256, object) of the bundles its tasks name; the worker keeps the path when
the file there has that content, else lands the bytes in its own repository cache
(``<repo cache>/bundles/<sha256>.bundle``, fetched once per node) and evaluates the task with that
path (:func:`land`, :func:`with_bundle`). The task's content hash leaves the location out
(oracle/tasks/task.py), so a row is the same wherever its bundle was read.

A ``path`` repository cannot travel (a whole clone); a worker without it fails that row, with the
error naming ``task.repository.path`` and suggesting a bundle (oracle/repo/base.py).

Lines are peeked, not validated: only a line mentioning ``"bundle"`` is decoded, and any line that
does not read as a bundle task travels as it is (the worker reports what is wrong with it).
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import json
import os
import tempfile
from pathlib import Path
from typing import Any, Callable

from oracle.batch.source import InputEntry

_HASHES: dict[tuple[str, int, int, int, int], str] = {}
"""sha256 of a file by (real path, device, inode, size, mtime): a worker checks a bundle per chunk."""


def bundle_path(entry: InputEntry) -> str | None:
    """The absolute bundle path the entry's task names (relative to the input file's directory, as
    the task loader reads it), or None (no bundle, or a line that does not read as a task)."""
    if not entry.raw or b'"bundle"' not in entry.raw:
        return None
    try:
        data = json.loads(entry.raw)
        bundle = data["task"]["repository"]["bundle"]
    except (ValueError, KeyError, TypeError, RecursionError):
        return None
    if not isinstance(bundle, str) or not bundle or "\0" in bundle:
        return None
    return bundle if os.path.isabs(bundle) else os.path.join(os.path.dirname(os.path.abspath(entry.source)), bundle)


def file_sha256(path: str) -> str | None:
    """sha256 of the file at ``path`` (None when there is no readable regular file there)."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    if not os.path.isfile(path):
        return None
    key = (os.path.realpath(path), st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)
    if key not in _HASHES:
        digest = hashlib.sha256()
        try:
            with open(path, "rb") as fh:
                for block in iter(lambda: fh.read(1 << 20), b""):
                    digest.update(block)
        except OSError:
            return None
        if len(_HASHES) > 1024:
            _HASHES.clear()
        _HASHES[key] = digest.hexdigest()
    return _HASHES[key]


class Shipper:
    """The driver's side: each distinct bundle read and put once (``put``: ``ray.put``)."""

    def __init__(self, put: Callable[[bytes], Any]) -> None:
        self._put = put
        self._by_sha: dict[str, Any] = {}
        self._by_path: dict[tuple[str, int, int, int], tuple[str, Any]] = {}

    @property
    def shipped(self) -> int:
        """Distinct bundles put so far."""
        return len(self._by_sha)

    def ship(self, entry: InputEntry) -> tuple[str, tuple[str, Any]] | None:
        """(path, (sha256, object)) for the bundle the entry's task names; None when it names none,
        or one the driver cannot read (then the worker's own file, or its error, decides)."""
        path = bundle_path(entry)
        if path is None:
            return None
        try:
            st = os.stat(path)
        except OSError:
            return None
        key = (path, st.st_ino, st.st_size, st.st_mtime_ns)
        if key not in self._by_path:
            try:
                data = Path(path).read_bytes()
            except OSError:
                return None
            sha = hashlib.sha256(data).hexdigest()
            if sha not in self._by_sha:
                self._by_sha[sha] = self._put(data)
            self._by_path[key] = (sha, self._by_sha[sha])
        return path, self._by_path[key]


def land(path: str, sha256: str, fetch: Callable[[], bytes], cache_root: str | Path) -> str:
    """The worker's side: ``path`` when the file there has the content ``sha256``; else the bundle's
    copy in this node's cache (``cache_root/bundles/<sha256>.bundle``), written from ``fetch()`` now
    unless it is there already. ``ValueError`` when the fetched bytes do not have that hash."""
    if file_sha256(path) == sha256:
        return path
    folder = Path(cache_root) / "bundles"
    target = folder / f"{sha256}.bundle"
    if file_sha256(str(target)) == sha256:
        return str(target)
    data = fetch()
    if hashlib.sha256(data).hexdigest() != sha256:
        raise ValueError(f"task.repository.bundle: the shipped copy of {path} does not have its sha256 {sha256}")
    folder.mkdir(parents=True, exist_ok=True, mode=0o755)
    fd, tmp = tempfile.mkstemp(prefix=".landing-", dir=folder)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        os.chmod(tmp, 0o644)
        os.replace(tmp, target)  # another process landing the same bytes writes the same file
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    return str(target)


def with_bundle(entry: InputEntry, bundle: str) -> InputEntry:
    """The entry with its task's bundle at ``bundle`` (an absolute path). Its key (the resume key of
    the line as read) is kept."""
    data = json.loads(entry.raw)
    data["task"]["repository"]["bundle"] = bundle
    raw = json.dumps(data, ensure_ascii=False).encode("utf-8")
    return dataclasses.replace(entry, raw=raw, size=len(raw))


def landed_entries(entries: list[InputEntry], bundles: dict[str, tuple[str, Any]], cache_root: str | Path,
                   get: Callable[[Any], bytes]) -> list[InputEntry]:
    """Each entry with its bundle landed where this node has it (see :func:`land`). ``bundles``: the
    chunk's path -> (sha256, object); ``get``: ``ray.get``. A bundle that cannot be landed leaves
    the entry as it is (the evaluation then says why the file cannot be read)."""
    out = []
    for entry in entries:
        path = bundle_path(entry)
        if path is not None and path in bundles:
            sha, ref = bundles[path]
            try:
                landed = land(path, sha, functools.partial(get, ref), cache_root)
            except (OSError, ValueError):
                landed = path
            if landed != path:
                entry = with_bundle(entry, landed)
        out.append(entry)
    return out
