"""The test side's own pytest: a read-only, content-addressed copy of the installed pure-Python pytest.

Why a copy: the sandboxed interpreter is often the system's (``/usr/bin/python3.11``, standard library
only), and the sandbox uid cannot read the oracle's own environment (``/root/.pyenv``, a private
venv). So pytest and its dependencies (pluggy, iniconfig, packaging, pygments and the ``py`` shim:
everything ``pytest``'s requirements name for this interpreter, taken from ``importlib.metadata``
file lists) are copied once into a directory named by their content under the oracle cache dir,
made world-readable and read-only, mounted read-only into the sandbox and put on the test process's
``sys.path`` only. A task whose environment brings its own pytest uses that instead (see
``PytestSource``).

Nothing of a candidate ever reaches this directory: it is written here, on the host, from the
installed distributions, and verified against their RECORD hashes while copying.
"""

from __future__ import annotations

import base64
import functools
import hashlib
import os
import re
import shutil
import stat
import subprocess
import tempfile
import threading
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Literal

from oracle.errors import SandboxError
from oracle.sandbox import slots
from oracle.sandbox.layers import _world_readable_chain

ROOT_DISTRIBUTION = "pytest"
_NOT_NEEDED = frozenset({"colorama"})
"""Requirements pytest names that do nothing here (colorama: Windows consoles)."""
CACHE_ENV = "ORACLE_CACHE_DIR"
SHARED_CACHE = Path("/var/cache/oracle-sandbox")
"""As root: the directory that already holds the world-readable nsjail copy (sandbox/layers.py)."""


@dataclass(frozen=True)
class PytestSource:
    """Where the test side's pytest comes from: ``path`` goes first on the test process's sys.path
    (None: the task's environment already has pytest on it) and is mounted read-only."""

    version: str
    origin: Literal["pinned", "environment"]
    """``pinned`` (the copy made here) or ``environment`` (the task's environment provides it)."""
    path: str | None = None
    plugin_autoload: bool = False
    """Load the plugins installed next to pytest (entry points): only for an environment the task
    chose; the pinned copy holds none, and nothing else on the test side's path may add one."""


def cache_root() -> Path:
    """The oracle cache dir: ``$ORACLE_CACHE_DIR``; where the sandbox drops to other users (root),
    ``/var/cache/oracle-sandbox`` (world-readable, beside the nsjail copy and the environment cache);
    else ``$XDG_CACHE_HOME/oracle`` (the sandbox keeps the caller's uid), as the environment cache."""
    if os.environ.get(CACHE_ENV):
        return Path(os.environ[CACHE_ENV])
    if slots.can_drop_privileges():
        return SHARED_CACHE
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "oracle"


_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*")


def _requirement_names(dist: metadata.Distribution) -> list[str]:
    """The distributions ``dist`` needs on this interpreter (extras and other platforms left out)."""
    from packaging.requirements import Requirement  # a dependency of pytest itself

    names = []
    for text in dist.requires or []:
        req = Requirement(text)
        if req.marker is not None and not req.marker.evaluate({"extra": ""}):
            continue
        if req.name.lower() not in _NOT_NEEDED:
            names.append(req.name)
    return names


def _distributions() -> list[metadata.Distribution]:
    """pytest and everything it needs here, each once."""
    seen: dict[str, metadata.Distribution] = {}
    todo = [ROOT_DISTRIBUTION]
    while todo:
        name = todo.pop()
        key = re.sub(r"[-_.]+", "-", name).lower()
        if key in seen:
            continue
        try:
            dist = metadata.distribution(name)
        except metadata.PackageNotFoundError:
            raise SandboxError(f"pytest tests need {name!r} installed where the oracle runs (pip install "
                               f"'oracle-router[sandbox]')") from None
        seen[key] = dist
        todo.extend(_requirement_names(dist))
    return sorted(seen.values(), key=lambda d: d.metadata["Name"].lower())


def _files(dist: metadata.Distribution) -> list[tuple[str, Path, str | None]]:
    """(path relative to site-packages, absolute path, RECORD hash) of what the copy needs: the
    distribution's modules and data, and its METADATA (so ``importlib.metadata.version`` works
    inside); never scripts, bytecode or entry points."""
    out = []
    for f in dist.files or []:
        rel = str(f).replace(os.sep, "/")
        parts = rel.split("/")
        if rel.startswith("../") or "__pycache__" in parts or rel.endswith(".pyc"):
            continue
        if parts[0].endswith(".dist-info") and parts[-1] != "METADATA":
            continue
        digest = f.hash.value if f.hash is not None and f.hash.mode == "sha256" else None
        out.append((rel, Path(f.locate()), digest))
    return out


def _b64_sha256(data: bytes) -> str:
    return base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()


@functools.lru_cache(maxsize=1)
def _plan() -> tuple[str, str, tuple[tuple[str, Path, str | None], ...]]:
    """(pytest version, content key, files): the key is the hash of every file's path and RECORD hash."""
    dists = _distributions()
    files = tuple(sorted((f for d in dists for f in _files(d)), key=lambda x: x[0]))
    h = hashlib.sha256()
    for rel, path, digest in files:
        if digest is None:
            digest = _b64_sha256(path.read_bytes())
        h.update(f"{rel}\0{digest}\n".encode())
    version = next(d.version for d in dists if d.metadata["Name"].lower() == ROOT_DISTRIBUTION)
    return version, h.hexdigest()[:20], files


def _readonly(root: Path) -> None:
    """World-readable and read-only: files 0444, directories 0555 (the sandbox mounts it read-only too)."""
    for dirpath, dirnames, filenames in os.walk(root):
        for name in filenames:
            os.chmod(os.path.join(dirpath, name), 0o444)
        os.chmod(dirpath, 0o555)


def _writable(root: Path) -> None:
    for dirpath, _dirs, _files in os.walk(root):
        os.chmod(dirpath, stat.S_IRWXU)


@functools.lru_cache(maxsize=8)
def _cache_tag(interpreter: str) -> str:
    """The bytecode tag of ``interpreter`` (``cpython-311``): its compiled files are its own."""
    try:
        out = subprocess.run([interpreter, "-E", "-s", "-c", "import sys; print(sys.implementation.cache_tag)"],
                             capture_output=True, text=True, timeout=30, check=True).stdout.strip()
    except (OSError, subprocess.SubprocessError) as exc:
        raise SandboxError(f"cannot ask {interpreter} for its bytecode tag: {exc}") from None
    if not re.fullmatch(r"[a-z]+-[0-9]+[a-z0-9]*", out):
        raise SandboxError(f"{interpreter} gave an unexpected bytecode tag {out!r}")
    return out


def _compile(root: Path, interpreter: str) -> None:
    """Byte-compile the copy with the sandbox's own interpreter, as ``unchecked-hash`` files (valid
    whatever the copy's timestamps): the test process then loads pytest without compiling it."""
    try:
        subprocess.run([interpreter, "-E", "-s", "-m", "compileall", "-q", "-j", "0", "--invalidation-mode",
                        "unchecked-hash", str(root)], capture_output=True, timeout=300, check=True)
    except (OSError, subprocess.SubprocessError) as exc:
        detail = getattr(exc, "stderr", b"") or b""
        raise SandboxError(f"cannot byte-compile the test side's pytest with {interpreter}: {exc} "
                           f"{detail.decode(errors='replace')[-300:]}") from None


def pinned(interpreter: str) -> PytestSource:
    """The pinned copy for the sandbox's ``interpreter``, made on first use (one per content and
    bytecode tag: later calls and processes reuse it)."""
    return _pinned(interpreter, str(cache_root()))


def _build(target: Path, interpreter: str, files: tuple[tuple[str, Path, str | None], ...]) -> None:
    """Copy, verify and byte-compile into a temp dir of this call's own, then publish it under
    ``target`` with one rename: a reader finds the whole copy or none, whoever else builds at once."""
    base = target.parent
    base.mkdir(parents=True, exist_ok=True)
    for d in (base.parent, base):  # traversable by the sandbox uid
        os.chmod(d, os.stat(d).st_mode | 0o555)
    tmp = Path(tempfile.mkdtemp(prefix=f".tmp-{target.name}-", dir=base))
    try:
        for rel, path, digest in files:
            data = path.read_bytes()
            if digest is not None and _b64_sha256(data) != digest:
                raise SandboxError(f"the installed {rel} differs from its distribution's RECORD; "
                                   "reinstall pytest (pip install --force-reinstall pytest)")
            dest = tmp / rel
            dest.parent.mkdir(parents=True, exist_ok=True)
            dest.write_bytes(data)
        _compile(tmp, interpreter)
        _readonly(tmp)
        try:
            os.rename(tmp, target)
        except OSError:  # another process made it first: same content, by its name
            pass
    finally:
        if tmp.exists():
            _remove(tmp)


def _remove(path: Path) -> None:
    """Remove a tree this module made read-only (made writable first)."""
    _writable(path)
    shutil.rmtree(path, ignore_errors=True)


_BUILDING = threading.Lock()
"""One builder per process at a time: ``lru_cache`` lets two threads compute the same copy at once."""


def _complete(target: Path, files: tuple[tuple[str, Path, str | None], ...]) -> bool:
    """Whether every file of the plan is in ``target`` (a copy cut short is never used)."""
    return all((target / rel).is_file() for rel, _path, _digest in files)


def _set_aside(target: Path) -> None:
    """Move an incomplete copy out of the way (renamed first, so no reader finds it half removed)."""
    aside = Path(tempfile.mkdtemp(prefix=".incomplete-", dir=target.parent))
    try:
        os.rename(target, aside / "copy")
    except OSError:  # another process set it aside or replaced it first
        pass
    _remove(aside)


@functools.lru_cache(maxsize=8)
def _pinned(interpreter: str, root: str) -> PytestSource:
    version, key, files = _plan()
    tag = _cache_tag(interpreter)
    base = Path(root) / "pytest"
    target = base / f"{version}-{key}-{tag}"
    with _BUILDING:
        if target.is_dir() and not _complete(target, files):
            _set_aside(target)
        if not target.is_dir():
            _build(target, interpreter, files)
    if slots.can_drop_privileges() and not _world_readable_chain(str(target / "pytest")):
        raise SandboxError(f"the sandbox user cannot read the test side's pytest at {target} (a directory on "
                           f"the way is not world-readable); set {CACHE_ENV} to a directory it can read")
    return PytestSource(version=version, origin="pinned", path=str(target))


def environment_pytest(sys_path: list[str] | tuple[str, ...], prefixes: list[str] | tuple[str, ...] = ()
                       ) -> PytestSource | None:
    """The pytest a task's environment provides: on its ``sys_path`` (a built environment), or in
    the site-packages of an interpreter prefix it mounts (a prepared venv); with that
    distribution's version. None when it has none."""
    roots = [Path(p) for p in sys_path]
    for prefix in prefixes:
        roots += sorted(Path(prefix).glob("lib/python3*/site-packages"))
    for root in roots:
        if not (root / "pytest" / "__init__.py").is_file():
            continue
        for info in sorted(root.glob("pytest-*.dist-info")):
            dist = metadata.Distribution.at(info)
            if dist.version:
                return PytestSource(version=dist.version, origin="environment", plugin_autoload=True)
        return PytestSource(version="unknown", origin="environment", plugin_autoload=True)
    return None


def source(interpreter: str, environment_sys_path: list[str] | tuple[str, ...] = (),
           environment_mounts: list[str] | tuple[str, ...] = ()) -> PytestSource:
    """The test side's pytest: the environment's when it has one, else the pinned copy for ``interpreter``."""
    return environment_pytest(environment_sys_path, environment_mounts) or pinned(interpreter)
