"""The environment cache: requirements installed once per (requirements, interpreter, platform),
read-only for every sandboxed run after that.

Why it looks like this:
- **Content-addressed.** The directory's name is the hash of the normalized requirements, the
  interpreter's version, implementation and compiled-file tag, and the platform with its C library:
  whatever asks for the same thing, from any task or later run, finds the same directory.
- **Outside the sandbox, with the user's pip.** pip (envbuild.py) runs on the host with the user's
  environment, so pip.conf, ``PIP_INDEX_URL``, ``PIP_FIND_LINKS`` and proxies apply as for any
  install. Nothing of the build runs in a sandbox, and no candidate runs during it.
- **One flat site-packages directory** (``pip install --target``), run by the very interpreter the
  sandbox runs, so compiled files and binary wheels fit it. Not a venv: a venv's ``bin/python`` is a
  link the sandbox would have to resolve, and a target directory holds only what was installed
  (``--target`` ignores what the interpreter already has), so it is complete on its own. The run
  puts it first on ``sys.path`` (runtime/zygote.py), on both sides of the channel.
- **Atomic and safe to share.** Built in a temporary directory beside the cache entries, described
  by a manifest, then renamed into place: a reader sees a complete environment or none. A lock file
  per key serializes builders across threads and processes; the second waits and reuses the first's.
  Leftovers of a crashed build are removed by the next builder of that key.
- **World-readable.** The sandbox user must read it: directories 755, files 644 (executables 755),
  and the cache root's every parent searchable; it is mounted read-only, so no run can change it.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import stat
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from oracle._internal.canonical import canonical_json
from oracle._internal.file_lock import FileLock
from oracle.errors import EnvironmentBuildError
from oracle.sandbox import slots
from oracle.sandbox.interpreters import Interpreter, unreadable

SHARED_CACHE = Path("/var/cache/oracle-sandbox/environments")
MANIFEST = "manifest.json"
SITE = "site-packages"
LAYOUT = 1
"""Bumped when the layout of an entry changes: part of the key, so old entries are never misread."""


def default_root() -> Path:
    """Where environments live when ``verifier.environment_cache`` is not set."""
    if slots.can_drop_privileges():
        return SHARED_CACHE
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "oracle" / "environments"


def environment_key(requirements: list[str], interpreter: Interpreter) -> str:
    """The cache key: what the environment is for, hashed (see module docstring)."""
    what = {"layout": LAYOUT, "requirements": sorted(requirements), "python": interpreter.version,
            "implementation": interpreter.implementation, "cache_tag": interpreter.cache_tag,
            "platform": interpreter.platform}
    return hashlib.sha256(canonical_json(what).encode()).hexdigest()[:32]


@dataclass(frozen=True)
class BuiltEnvironment:
    """One environment of the cache, ready to mount."""

    key: str
    path: str
    """The entry's directory (mounted read-only)."""
    site_packages: str
    """What the run puts first on ``sys.path``."""
    content_hash: str
    """sha256 over every installed file but compiled bytecode: what the candidates really ran with."""
    requirements: tuple[str, ...]
    installed: tuple[str, ...]
    """``name==version`` of every distribution in it."""
    python_version: str
    reused: bool
    """True when it was already there (nothing was installed by this call)."""
    seconds: float
    """What this call spent (waiting for another builder included)."""
    build_seconds: float
    """What building it took, when it was built."""

    def record(self) -> dict:
        return {"key": self.key, "path": self.path, "content_hash": self.content_hash,
                "requirements": list(self.requirements), "installed": list(self.installed),
                "python_version": self.python_version, "reused": self.reused,
                "seconds": round(self.seconds, 3), "build_seconds": round(self.build_seconds, 3)}


RETRY_AFTER_S = 60.0
"""A failed build is not retried by this process for this long: a batch of a thousand tasks naming
one environment pip cannot install fails each of them at once, with pip's message, not after a
thousand pip runs."""
_FAILED: dict[tuple[str, str], tuple[float, str]] = {}

Installer = Callable[[list[str], Interpreter, Path, float], None]
"""``install(requirements, interpreter, target_dir, timeout_s)``; raises EnvironmentBuildError."""


class EnvironmentCache:
    """The cache under ``root`` (see module docstring)."""

    def __init__(self, root: str | os.PathLike[str] | None = None) -> None:
        self.root = Path(root) if root else default_root()

    def lookup(self, requirements: list[str], interpreter: Interpreter) -> BuiltEnvironment | None:
        """The environment when it is already built, else None (nothing is built)."""
        started = time.monotonic()
        return self._read(self.root / environment_key(requirements, interpreter), started, reused=True)

    def ensure(self, requirements: list[str], interpreter: Interpreter, install: Installer,
               timeout_s: float = 900.0, installer: str = "pip") -> BuiltEnvironment:
        """The environment for ``requirements`` on ``interpreter``: reused when built, else built now
        (once, whoever else asks at the same time)."""
        started = time.monotonic()
        key = environment_key(requirements, interpreter)
        entry = self.root / key
        found = self._read(entry, started, reused=True)
        if found is not None:
            return found
        failed = _FAILED.get((str(self.root), key))
        if failed is not None and time.monotonic() - failed[0] < RETRY_AFTER_S:
            raise EnvironmentBuildError(f"{failed[1]} (the build failed {time.monotonic() - failed[0]:.0f} s ago; "
                                        f"it is tried again {RETRY_AFTER_S:.0f} s after a failure)")
        self._prepare_root()
        try:
            return self._build(requirements, interpreter, install, timeout_s, key, entry, started, installer)
        except EnvironmentBuildError as exc:
            _FAILED[(str(self.root), key)] = (time.monotonic(), str(exc))
            raise

    def _build(self, requirements: list[str], interpreter: Interpreter, install: Installer, timeout_s: float,
               key: str, entry: Path, started: float, installer: str) -> BuiltEnvironment:
        with self._locked(key, timeout_s):
            found = self._read(entry, started, reused=True)  # another builder finished while we waited
            if found is not None:
                return found
            for stale in self.root.glob(f".build-{key}-*"):  # a crashed build of this key: we hold its lock
                shutil.rmtree(stale, ignore_errors=True)
            tmp = Path(tempfile.mkdtemp(prefix=f".build-{key}-", dir=self.root))
            try:
                built_at = time.monotonic()
                install(requirements, interpreter, tmp / SITE, timeout_s)
                build_seconds = time.monotonic() - built_at
                manifest = {"layout": LAYOUT, "key": key, "requirements": sorted(requirements),
                            "python": interpreter.version, "implementation": interpreter.implementation,
                            "cache_tag": interpreter.cache_tag, "platform": interpreter.platform,
                            "built_with": interpreter.path, "installer": installer, "installed": _installed(tmp / SITE),
                            "content_hash": content_hash(tmp / SITE), "build_seconds": round(build_seconds, 3),
                            "built": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
                (tmp / MANIFEST).write_text(json.dumps(manifest, indent=1, sort_keys=True) + "\n")
                _world_readable(tmp)
                os.rename(tmp, entry)
            except BaseException:
                shutil.rmtree(tmp, ignore_errors=True)
                raise
        built = self._read(entry, started, reused=False)
        if built is None:
            raise EnvironmentBuildError(f"the environment {entry} vanished right after it was built")
        return built

    # -- internals -------------------------------------------------------------------------
    def _read(self, entry: Path, started: float, *, reused: bool) -> BuiltEnvironment | None:
        try:
            manifest = json.loads((entry / MANIFEST).read_text())
        except (OSError, ValueError):
            return None
        if manifest.get("layout") != LAYOUT or not (entry / SITE).is_dir():
            return None
        return BuiltEnvironment(
            key=entry.name, path=str(entry), site_packages=str(entry / SITE),
            content_hash=str(manifest.get("content_hash")), requirements=tuple(manifest.get("requirements") or ()),
            installed=tuple(manifest.get("installed") or ()), python_version=str(manifest.get("python")),
            reused=reused, seconds=time.monotonic() - started,
            build_seconds=float(manifest.get("build_seconds") or 0.0))

    def _prepare_root(self) -> None:
        try:
            missing = [p for p in (self.root, *self.root.parents) if not p.exists()]
            self.root.mkdir(parents=True, exist_ok=True, mode=0o755)
            for made in missing:  # whatever the umask: the sandbox user must be able to enter them
                os.chmod(made, 0o755)
            (self.root / ".locks").mkdir(exist_ok=True, mode=0o700)
        except OSError as exc:
            raise EnvironmentBuildError(f"the environment cache {self.root} cannot be created: {exc}; set "
                                        "verifier.environment_cache to a directory you can write") from None
        why = unreadable(self.root)
        if why:
            raise EnvironmentBuildError(f"the environment cache cannot be mounted into the sandbox: {why}; set "
                                        "verifier.environment_cache to a directory other users can read")

    def _locked(self, key: str, timeout_s: float):
        return FileLock(self.root / ".locks" / f"{key}.lock", timeout_s, lambda p, t: EnvironmentBuildError(
            f"another build of this environment held {p} for more than {t:.0f} s"), poll_s=0.1)


def _installed(site: Path) -> list[str]:
    """``name==version`` of each distribution pip put in ``site`` (from its METADATA)."""
    out = []
    for info in sorted(site.glob("*.dist-info")):
        name = version = None
        try:
            with open(info / "METADATA", encoding="utf-8", errors="replace") as fh:
                for line in fh:
                    if not line.strip():
                        break
                    if line.startswith("Name:"):
                        name = line[5:].strip()
                    elif line.startswith("Version:"):
                        version = line[8:].strip()
        except OSError:
            continue
        if name:
            out.append(f"{name}=={version}")
    return out


def content_hash(site: Path) -> str:
    """sha256 over the relative path and bytes of every file in ``site``, bytecode caches aside
    (compiled files carry build times; the sources they come from are hashed)."""
    digest = hashlib.sha256()
    for dirpath, dirnames, filenames in os.walk(site):
        dirnames[:] = sorted(d for d in dirnames if d != "__pycache__")
        for name in sorted(filenames):
            if name.endswith((".pyc", ".pyo")):
                continue
            path = Path(dirpath) / name
            rel = path.relative_to(site).as_posix()
            digest.update(rel.encode() + b"\0")
            if path.is_symlink():
                digest.update(b"link:" + os.readlink(path).encode())
            else:
                with open(path, "rb") as fh:
                    while chunk := fh.read(1 << 20):
                        digest.update(chunk)
            digest.update(b"\0")
    return digest.hexdigest()


def _world_readable(top: Path) -> None:
    """Directories 755, files 644 (755 when executable): the sandbox user reads, nobody else writes."""
    for dirpath, dirnames, filenames in os.walk(top):
        os.chmod(dirpath, 0o755)
        for name in filenames:
            path = os.path.join(dirpath, name)
            if os.path.islink(path):
                continue
            mode = os.stat(path).st_mode
            os.chmod(path, 0o755 if mode & stat.S_IXUSR else 0o644)


__all__ = ["BuiltEnvironment", "EnvironmentCache", "SHARED_CACHE", "content_hash", "default_root", "environment_key"]
