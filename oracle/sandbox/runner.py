"""Run one program in a fresh sandboxed process and collect what happened.

Every run, whatever the backend: a new session; the process group killed on timeout and after exit
(plus every process of the run's cgroup or slot uid, which catches double-forked daemons); stdout
and stderr capped; a temp dir removed afterwards (and, after a kill -9 of the oracle, by the sweep
the next Sandbox of any process runs once); an allow-listed environment; stdin is a pipe
holding only what the caller gives (closed right after), never the evaluator's own stdin.

A run over a repository (``RunRequest.tree``) binds that host directory read-write at ``/repo``
(Landlock: at its own path, in the write list) as the cwd, for that run only, with its directories
owned by the run's slot uid while it runs (``tree_owner.py``); every other guarantee is unchanged.
"""

from __future__ import annotations

import asyncio
import logging
import os
import shutil
import signal
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from oracle.errors import IsolationUnavailable, SandboxError
from oracle.sandbox import layers as probe_mod
from oracle.sandbox import seccomp, slots, tree_owner
from oracle.sandbox.cgroups import RunCgroup
from oracle.sandbox.confine import PreparedConfinement, mount_tmpfs, unmount
from oracle.sandbox.launch import SANDBOX_REPO, SANDBOX_SRC, SANDBOX_WORK, SYSTEM_DIRS, build_command, make_preexec
from oracle.sandbox.limits import SandboxLimits

Backend = Literal["auto", "nsjail", "bubblewrap", "landlock", "rlimits"]
WEAK_ENV = "ORACLE_ALLOW_WEAK_SANDBOX"
log = logging.getLogger("oracle.sandbox")
_CHUNK = 65536


@dataclass(frozen=True)
class RunRequest:
    """What to run. ``{src}``, ``{work}`` and ``{repo}`` in ``command`` become the paths the program sees."""

    command: list[str]
    files: dict[str, str | bytes] = field(default_factory=dict)
    """Written read-only into the src dir before the run."""
    stdin: bytes = b""
    timeout_s: float | None = None
    """Wall-clock limit for this run; None takes the limits' default."""
    address_limit: bool = True
    """Apply RLIMIT_AS when no cgroup bounds memory (off for runtimes like node that reserve a lot)."""
    tree: str | None = None
    """A host directory bound read-write at ``/repo`` for this run only, and the run's cwd (a
    candidate's working tree). Its directories belong to the run's uid during the run, its files
    keep their owner; its parents must be traversable by others."""
    ro_paths: tuple[str, ...] = ()
    """Host directories mounted read-only for this run only, beside the sandbox's ``extra_ro_paths``
    (a task environment's mounts)."""
    pass_fds: tuple[int, ...] = ()
    """Host fds the program inherits under the same numbers (a report pipe's write end); the caller
    keeps and closes its own copies."""
    env: dict[str, str] = field(default_factory=dict)
    """Variables added to the allow-listed environment (they cannot replace PATH, HOME or TMPDIR)."""


@dataclass(frozen=True)
class RunOutcome:
    """What happened: exit status, captured output, and which limits fired."""

    exit_code: int | None
    signal: int | None
    stdout: bytes
    stderr: bytes
    timed_out: bool
    output_truncated: bool
    memory_limit_hit: bool
    duration_ms: float
    backend: str
    uid: int | None
    memory_peak_bytes: int | None = None
    leftovers_killed: int = 0
    """Processes still alive after the main one ended (daemons), killed by the cleanup."""


class Sandbox:
    """Resolves a backend once (refusing weak isolation unless opted in) and runs programs in it."""

    def __init__(self, *, backend: Backend = "auto", limits: SandboxLimits | None = None,
                 allow_weak_isolation: bool = False, extra_ro_paths: tuple[str, ...] = ()) -> None:
        self.limits = limits or SandboxLimits()
        self.layers = probe_mod.probe()
        _sweep_once()
        if backend == "auto":
            backend = self.layers.best()  # type: ignore[assignment]
        elif backend not in self.layers.available:
            raise IsolationUnavailable(
                f"sandbox backend {backend!r} is not available here: "
                f"{self.layers.missing.get(backend, 'unknown backend')}")
        self.backend: str = backend
        self.isolation_level = probe_mod.LEVEL[backend]
        if self.isolation_level == "rlimits" and not (
                allow_weak_isolation and os.environ.get(WEAK_ENV) == "1"):
            raise IsolationUnavailable(
                "refusing to run untrusted code with rlimits only (no namespaces, no Landlock); "
                f"missing: {self.layers.missing}. Opt in with verifier.allow_weak_isolation=true "
                f"and {WEAK_ENV}=1")
        self.extra_ro_paths = tuple(p for p in extra_ro_paths if not p.startswith("/usr/"))
        # nsjail, bubblewrap and Landlock's confinement carry the seccomp filter; rlimits gets it here.
        self._rlimits_filter = seccomp.PreparedFilter() if backend == "rlimits" else None

    def provenance(self) -> dict:
        """What goes into every result: backend, isolation level and the extra layers in force."""
        c = self.layers.cgroups
        return {"backend": self.backend, "isolation_level": self.isolation_level,
                "backend_version": probe_mod.backend_version(self.backend, self.layers.available.get(self.backend, "")),
                "cgroup_memory": c.memory, "cgroup_pids": c.pids, "cgroup_cpu": c.cpu,
                "cgroup_version": c.version,
                "uid_drop": self.layers.uid_drop,
                "limits": {"memory_mb": self.limits.memory_mb, "max_pids": self.limits.max_pids,
                           "output_limit_bytes": self.limits.output_limit_bytes,
                           "disk_mb": self.limits.disk_mb}}

    def _paths(self, base: Path) -> tuple[str, str]:
        if self.isolation_level == "namespaces":
            return SANDBOX_SRC, SANDBOX_WORK
        return str(base / "src"), str(base / "work")

    async def run(self, request: RunRequest) -> RunOutcome:
        """Run once; raises SandboxError only when the sandbox itself cannot start the program."""
        timeout_s = request.timeout_s or self.limits.timeout_s
        limits = self.limits.for_timeout(timeout_s)  # nsjail's time limit and RLIMIT_CPU follow it
        slot = slots.claim_slot()
        uid = slot.uid if slot else None
        # The name says which slot lock guards the dir, so a later sweep knows when it is a leftover.
        base = Path(tempfile.mkdtemp(prefix=f"oracle-run-{uid}-" if uid is not None else f"oracle-run-p{os.getpid()}-"))
        cgroup = RunCgroup(self.layers.cgroups, limits.memory_mb * 1024 * 1024, limits.max_pids, slot_uid=uid)
        confinement = None
        filter_fd = None
        mounted = False
        tree = tree_owner.check_tree(request.tree) if request.tree is not None else None
        tree_owner_ids = None
        try:
            src, work = base / "src", base / "work"
            src.mkdir(mode=0o755)
            work.mkdir(mode=0o700)
            for name, content in request.files.items():
                target = src / name
                data = content.encode() if isinstance(content, str) else content
                target.write_bytes(data)
                target.chmod(0o644)
            if uid is not None:
                os.chown(base, uid, uid)
                os.chown(work, uid, uid)
            if tree is not None and uid is not None:
                st = os.stat(tree)
                tree_owner_ids = (st.st_uid, st.st_gid)
                tree_owner.give(tree, uid)
            if self.isolation_level != "namespaces" and slots.can_drop_privileges():
                mounted = mount_tmpfs(str(work), limits.disk_mb * 1024 * 1024, uid)
            os.chmod(base, 0o711)
            src_path, work_path = self._paths(base)
            repo_path = "" if tree is None else SANDBOX_REPO if self.isolation_level == "namespaces" else tree
            command = [a.replace("{src}", src_path).replace("{work}", work_path).replace("{repo}", repo_path)
                       for a in request.command]
            env = {**request.env,
                   "PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": work_path, "TMPDIR": work_path,
                   "LANG": "C.UTF-8", "PYTHONDONTWRITEBYTECODE": "1", "PYTHONIOENCODING": "utf-8"}
            ro_paths = (*self.extra_ro_paths, *(p for p in request.ro_paths if p not in self.extra_ro_paths))
            exe = self.layers.available.get(self.backend, "")
            if self.backend == "bubblewrap":
                filter_fd = seccomp.filter_fd()
            argv = build_command(self.backend, exe, command, src_dir=str(src), limits=limits,
                                 layers=self.layers, extra_ro=ro_paths, env=env, pass_fds=request.pass_fds,
                                 seccomp_fd=filter_fd, tree=tree,
                                 cwd=SANDBOX_REPO if tree is not None else SANDBOX_WORK)
            if self.backend == "landlock":
                read = ["/usr", *[d for d in SYSTEM_DIRS if os.path.exists(d)], *ro_paths,
                        str(src), "/dev/urandom", "/dev/null"]
                # A repository run: its tests open /dev/null for writing (subprocess.DEVNULL, logging), and
                # builds rename across directories of the tree and of the work dir (REFER, within each).
                if tree is None:
                    confinement = PreparedConfinement(self.layers.landlock_abi, read, [str(work)])
                else:
                    confinement = PreparedConfinement(self.layers.landlock_abi, read, ["/dev/null"],
                                                      [str(work), tree])
                confinement.open_paths()
            cgroup.create()
            hook = make_preexec(uid=uid, procs_files=cgroup.procs_files, limits=limits,
                                confinement=confinement, seccomp_filter=self._rlimits_filter,
                                set_address_limit=request.address_limit and not self.layers.cgroups.memory
                                and self.isolation_level != "namespaces")
            direct = self.isolation_level != "namespaces"
            started = time.monotonic()
            try:
                proc = await asyncio.create_subprocess_exec(
                    *argv, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
                    stderr=asyncio.subprocess.PIPE, cwd=(tree or str(work)) if direct else "/",
                    env=env if direct else {"PATH": "/usr/bin:/bin"}, start_new_session=True,
                    preexec_fn=hook, close_fds=True,
                    pass_fds=tuple(request.pass_fds) + (() if filter_fd is None else (filter_fd,)))
            except (OSError, Exception) as exc:  # preexec failures arrive as SubprocessError
                raise SandboxError(f"{self.backend}: cannot start the sandboxed process: {exc}") from exc
            finally:
                if confinement is not None:
                    confinement.close_paths()
                if filter_fd is not None:
                    os.close(filter_fd)
                    filter_fd = None
            try:
                outcome = await self._supervise(proc, request.stdin, timeout_s,
                                                lambda: self._kill_everything(proc.pid, cgroup, uid))
            finally:
                # Close the pipes now: a killed grandchild may have held them open past the reads,
                # and an unclosed transport would complain after the event loop is gone.
                transport = getattr(proc, "_transport", None)
                if transport is not None:
                    transport.close()
            peak = cgroup.memory_peak_bytes()
            memory_hit = cgroup.memory_limit_hit()
            leftovers = self._cleanup(proc.pid, cgroup, uid)
            return RunOutcome(exit_code=outcome[0] if outcome[0] is None or outcome[0] >= 0 else None,
                              signal=-outcome[0] if outcome[0] is not None and outcome[0] < 0 else None,
                              stdout=outcome[1], stderr=outcome[2], timed_out=outcome[3],
                              output_truncated=outcome[4], memory_limit_hit=memory_hit,
                              duration_ms=(time.monotonic() - started) * 1000, backend=self.backend,
                              uid=uid, memory_peak_bytes=peak, leftovers_killed=leftovers)
        finally:
            if filter_fd is not None:
                os.close(filter_fd)
            cgroup.kill_and_remove()
            if mounted:
                unmount(str(base / "work"))
            if tree is not None and tree_owner_ids is not None:
                tree_owner.take_back(tree, *tree_owner_ids)
            shutil.rmtree(base, ignore_errors=True)
            if slot is not None:
                slot.release()

    async def _supervise(self, proc: asyncio.subprocess.Process, stdin: bytes, timeout_s: float,
                         kill_all) -> tuple[int | None, bytes, bytes, bool, bool]:
        cap = self.limits.output_limit_bytes
        truncated = asyncio.Event()
        bufs: dict[str, bytearray] = {"out": bytearray(), "err": bytearray()}

        async def pump(stream: asyncio.StreamReader, key: str) -> None:
            while True:
                chunk = await stream.read(_CHUNK)
                if not chunk:
                    return
                room = cap - len(bufs[key])
                if room > 0:
                    bufs[key] += chunk[:room]
                if len(chunk) > room and not truncated.is_set():
                    truncated.set()  # keep draining (and discarding) so no writer blocks on a full pipe
                    kill_all()

        async def feed() -> None:
            try:
                if stdin:
                    proc.stdin.write(stdin)  # type: ignore[union-attr]  # PIPE: never None
                    await proc.stdin.drain()  # type: ignore[union-attr]  # PIPE: never None
            except (BrokenPipeError, ConnectionResetError):
                pass
            finally:
                try:
                    proc.stdin.close()  # type: ignore[union-attr]  # PIPE: never None
                except (BrokenPipeError, ConnectionResetError):
                    pass

        tasks = [asyncio.create_task(feed()), asyncio.create_task(pump(proc.stdout, "out")),  # type: ignore[arg-type]  # PIPE: never None
                 asyncio.create_task(pump(proc.stderr, "err"))]  # type: ignore[arg-type]  # PIPE: never None
        timed_out = False
        try:
            await asyncio.wait_for(proc.wait(), timeout=timeout_s)
        except asyncio.TimeoutError:
            timed_out = not truncated.is_set()
            kill_all()
            await proc.wait()
        _killpg(proc.pid)
        # Grandchildren may hold the pipes open; give readers a moment, then stop reading.
        done, pending = await asyncio.wait(tasks, timeout=0.5)
        for t in pending:
            t.cancel()
        return proc.returncode, bytes(bufs["out"]), bytes(bufs["err"]), timed_out, truncated.is_set()

    def _kill_everything(self, pid: int, cgroup: RunCgroup, uid: int | None) -> None:
        """On timeout or output overflow: the process group, the cgroup members, the slot uid's processes."""
        _killpg(pid)
        for member in cgroup.members():
            _kill(member)
        if uid is not None and not cgroup.procs_files:
            for p in slots.processes_of_uid(uid):
                _kill(p)

    def _cleanup(self, pid: int, cgroup: RunCgroup, uid: int | None) -> int:
        _killpg(pid)
        killed = cgroup.kill_and_remove()
        if uid is not None:  # the slot uid is ours alone: anything still running under it is a leftover
            killed += slots.kill_until_gone(lambda: slots.processes_of_uid(uid), timeout_s=0.5, pause_s=0.01)
        return len(set(killed))


_sweep_lock = threading.Lock()
_swept = False


def _sweep_once() -> None:
    """Once per process: remove what a killed oracle (kill -9) left, see ``slots.sweep_leftovers``."""
    global _swept
    with _sweep_lock:
        if _swept:
            return
        _swept = True
        try:
            swept = slots.sweep_leftovers(tempfile.gettempdir())
        except OSError as exc:
            log.warning("sandbox: sweeping leftovers failed: %s", exc)
            return
        if swept["processes"] or swept["dirs"]:
            log.info("sandbox: swept leftovers of killed runs: %s", swept)


def _kill(pid: int) -> None:
    try:
        os.kill(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def _killpg(pgid: int) -> None:
    try:
        os.killpg(pgid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
