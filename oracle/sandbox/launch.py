"""Build the command line of each backend and the pre-exec hook that runs between fork and exec.

The hook is deliberately tiny: join the run's cgroups, set rlimits, drop to the slot uid, arm the
parent-death signal, and (for the direct backends) apply the confinement and seccomp filter
prepared before fork. It uses only ``os`` and
``resource`` functions bound at import time, never imports, never allocates big objects.

Filesystem view of the namespace backends: an empty read-only root with ``/usr`` (and the merged
/bin, /lib, /lib64, /sbin symlinks) bound read-only, the program files read-only at ``/src``, a
size-capped tmpfs at ``/work`` (the only writable place, also the cwd and HOME), private /proc and
/dev. /etc, /root, /home, /tmp and the host's temp dirs are simply not there. A run over a repository
tree also gets that one host directory bound read-write at ``/repo`` (its cwd), for that run only.
"""

from __future__ import annotations

import ctypes
import functools
import os
import platform
import resource
import signal
from typing import Callable, Sequence

from oracle.sandbox.confine import PreparedConfinement
from oracle.sandbox.limits import SandboxLimits
from oracle.sandbox.seccomp import PreparedFilter, kafel_policy

_prctl = ctypes.CDLL(None, use_errno=True).prctl  # bound before any fork: the hook must not load it
_prctl.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong]
_prctl.restype = ctypes.c_int
PR_SET_PDEATHSIG, SIGKILL = 1, int(signal.SIGKILL)


@functools.lru_cache(maxsize=1)
def _kafel_policy() -> str:
    return kafel_policy(platform.machine())


SYSTEM_DIRS = ("/bin", "/lib", "/lib64", "/sbin", "/lib32", "/libx32")
SANDBOX_SRC, SANDBOX_WORK, SANDBOX_REPO = "/src", "/work", "/repo"


def _system_mounts(backend: str) -> list[str]:
    args: list[str] = []
    ro = ["--ro-bind", "/usr", "/usr"] if backend == "bubblewrap" else ["-R", "/usr"]
    args += ro
    for d in SYSTEM_DIRS:
        if os.path.islink(d):
            target = os.readlink(d)
            args += ["--symlink", target, d] if backend == "bubblewrap" else ["-s", f"{target}:{d}"]
        elif os.path.isdir(d):
            args += ["--ro-bind", d, d] if backend == "bubblewrap" else ["-R", d]
    return args


def build_command(backend: str, exe: str, command: Sequence[str], *, src_dir: str,
                  limits: SandboxLimits, layers, extra_ro: Sequence[str],
                  env: dict[str, str] | None = None, pass_fds: Sequence[int] = (),
                  seccomp_fd: int | None = None, cwd: str = SANDBOX_WORK,
                  tree: str | None = None) -> list[str]:
    """The argv that starts ``command`` inside ``backend`` (landlock/rlimits: the command itself).

    ``limits`` are this run's: pass ``limits.for_timeout(run_timeout_s)`` so nsjail's time limit
    and the CPU rlimit follow a test's own timeout (likewise for ``make_preexec``).

    ``pass_fds``: inherited fds (beyond 0/1/2) the sandboxed program keeps. nsjail closes every
    other fd, so each gets a ``--pass_fd``; bubblewrap keeps inherited fds as they are; for the
    direct backends the caller's ``subprocess`` ``pass_fds`` is all it takes. Either way the caller
    must also hand them to ``subprocess`` (``pass_fds=``), which closes everything else.

    ``cwd``: where the program starts inside a namespace backend (``/work``, or ``/src`` for a
    program that must find its own files there, as the warm worker's ``python -m`` does).

    ``tree``: a host directory bound read-write at ``/repo`` (a candidate's working tree); the
    caller makes ``/repo`` the cwd. The direct backends see it at its host path instead (the
    caller puts it in Landlock's write list).

    The seccomp policy (``seccomp.py``): nsjail gets it as a kafel policy on its command line;
    bubblewrap reads the compiled program from ``seccomp_fd`` (``seccomp.filter_fd()``, one per
    start, also in the caller's ``pass_fds``) and refuses to build a command without it; for the
    direct backends the pre-exec hook applies it (Landlock's confinement, or ``seccomp_filter``).
    """
    env = env or {}
    if backend == "bubblewrap":
        if seccomp_fd is None:
            raise ValueError("bubblewrap needs seccomp_fd (seccomp.filter_fd()) for its seccomp filter")
        argv = [exe, "--unshare-all", "--die-with-parent", "--new-session", "--clearenv",
                "--seccomp", str(int(seccomp_fd))]
        for k, v in env.items():
            argv += ["--setenv", k, v]
        argv += _system_mounts(backend)
        for path in extra_ro:
            argv += ["--ro-bind", path, path]
        argv += ["--ro-bind-try", src_dir, SANDBOX_SRC, "--proc", "/proc", "--dev", "/dev"]
        if tree is not None:
            argv += ["--bind", tree, SANDBOX_REPO]
        if layers.bwrap_tmpfs_size:
            argv += ["--size", str(limits.disk_mb * 1024 * 1024)]
        argv += ["--tmpfs", SANDBOX_WORK, "--chdir", cwd, "--remount-ro", "/", "--"]
        return argv + list(command)
    if backend == "nsjail":
        memory = "inf" if layers.cgroups.memory else str(limits.memory_mb)
        argv = [exe, "-Mo", "--quiet", "--hostname", "sandbox",
                "--time_limit", str(int(limits.timeout_s) + 5),
                "--rlimit_as", memory, "--rlimit_cpu", str(limits.cpu_seconds),
                "--rlimit_fsize", str(limits.disk_mb), "--rlimit_nofile", str(limits.open_files),
                "--rlimit_nproc", str(limits.max_pids), "--seccomp_string", _kafel_policy()]
        for fd in pass_fds:
            argv += ["--pass_fd", str(int(fd))]
        for k, v in env.items():
            argv += ["-E", f"{k}={v}"]
        argv += _system_mounts(backend)
        for path in extra_ro:
            argv += ["-R", path]
        if os.path.isdir(src_dir):
            argv += ["-R", f"{src_dir}:{SANDBOX_SRC}"]
        if tree is not None:
            argv += ["-B", f"{tree}:{SANDBOX_REPO}"]
        argv += ["-B", "/dev/null", "-R", "/dev/urandom", "-R", "/dev/zero",
                 "-m", f"none:{SANDBOX_WORK}:tmpfs:size={limits.disk_mb * 1024 * 1024}",
                 "-D", cwd, "--"]
        return argv + list(command)
    return list(command)


def make_preexec(*, uid: int | None, procs_files: Sequence[str], limits: SandboxLimits,
                 confinement: PreparedConfinement | None, set_address_limit: bool,
                 set_nproc: bool = True, die_with_parent: bool = True,
                 seccomp_filter: PreparedFilter | None = None) -> Callable[[], None]:
    """The function run in the child after fork (the new session is made by subprocess).

    ``die_with_parent``: the child gets SIGKILL when the process that forked it dies, even by
    kill -9, so nothing a run started outlives a crashed oracle (nsjail and bubblewrap pass it on
    to the jailed program). Linux ties this to the forking *thread*: fork from a thread that
    outlives the run (the event loop's thread does). It is set after the uid drop, because a
    credential change clears it, and a parent that died before that is caught by getppid().

    ``seccomp_filter``: applied last, for a backend that applies no filter of its own (rlimits);
    a Landlock ``confinement`` applies it already, nsjail and bubblewrap get it from the command.
    """
    procs = [p.encode() if isinstance(p, str) else p for p in procs_files]
    rl = [
        (resource.RLIMIT_CORE, 0),
        (resource.RLIMIT_FSIZE, limits.disk_mb * 1024 * 1024),
        (resource.RLIMIT_NOFILE, limits.open_files),
        (resource.RLIMIT_CPU, limits.cpu_seconds),
    ]
    if set_nproc:
        rl.append((resource.RLIMIT_NPROC, limits.max_pids))
    if set_address_limit:
        rl.append((resource.RLIMIT_AS, limits.memory_mb * 1024 * 1024))
    setrlimit, write, open_, close, getpid = resource.setrlimit, os.write, os.open, os.close, os.getpid
    getppid, kill = os.getppid, os.kill
    wronly = os.O_WRONLY
    parent = getpid()  # the hook runs in a child of the process that builds it

    def hook() -> None:
        pid = str(getpid()).encode()
        for path in procs:
            fd = open_(path, wronly)
            try:
                write(fd, pid)
            finally:
                close(fd)
        for which, value in rl:
            setrlimit(which, (value, value))
        if uid is not None:
            os.setgroups([])
            os.setresgid(uid, uid, uid)
            os.setresuid(uid, uid, uid)
        if die_with_parent:
            if _prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) != 0 or getppid() != parent:
                kill(getpid(), SIGKILL)  # cannot arm it, or the parent is already gone
        if confinement is not None:
            confinement.apply()
        if seccomp_filter is not None:
            seccomp_filter.apply()

    return hook
