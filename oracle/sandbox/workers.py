"""Warm sandboxed workers: one long-lived sandbox per worker, a fresh forked process per run.

A worker is one sandbox (nsjail, bubblewrap or Landlock, on its own slot uid and cgroup) holding a
warm interpreter (the runtime package's zygote.py) that forks a clean process for every run. The verifier uses
workers in pairs: the candidate's side and the test's side never share a sandbox, a uid or a
process, and meet only through the channel the host hands to both (runtime/wire.py).

Workers die with this process (PR_SET_PDEATHSIG in the pre-exec hook, bubblewrap's
--die-with-parent), and a worker that misbehaves (a run that will not die, a broken control socket,
a work directory it cannot empty) is destroyed and replaced, never reused.
"""

from __future__ import annotations

import os
import select
import shutil
import socket
import struct
import subprocess
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from typing import Iterator
from pathlib import Path

from oracle.errors import SandboxError
from oracle.sandbox.runtime import wire, worker_state
from oracle.sandbox import Sandbox, seccomp, slots
from oracle.sandbox.cgroups import RunCgroup
from oracle.sandbox.confine import PreparedConfinement, mount_tmpfs, unmount
from oracle.sandbox.launch import SANDBOX_SRC, SANDBOX_WORK, SYSTEM_DIRS, build_command, make_preexec
from oracle.sandbox.limits import SandboxLimits

RUNTIME_DIR = Path(__file__).with_name("runtime")
RUNTIME_SUFFIXES = (".py", ".js")
RUNTIME_PACKAGE = "runtime"
"""The runtime's name inside the sandbox: ``/src/runtime``, started as ``-m runtime.zygote`` from ``/src``."""
ZYGOTE_MODULE = f"{RUNTIME_PACKAGE}.zygote"
WORKER_LIFETIME_S = 7 * 24 * 3600
"""The sandbox's own wall-clock limit for a worker; each run has its own limit, set by the host."""
START_TIMEOUT_S = 20.0
_HEADER = struct.Struct(">I")


def install_runtime(dest: Path) -> Path:
    """Copy the runtime package into ``dest/runtime`` (world-readable, nothing else) and return it.

    Why a copy: the sandbox sees only ``dest`` (read-only at ``/src``), never the installed
    ``oracle``; the zygote starts with ``dest`` as its working directory, so ``python -m`` puts that
    read-only directory, and nothing writable, first on its ``sys.path``.
    """
    package = dest / RUNTIME_PACKAGE
    package.mkdir(mode=0o755)
    for path in sorted(RUNTIME_DIR.iterdir()):
        if path.suffix not in RUNTIME_SUFFIXES or (path.name.startswith("_") and path.name != "__init__.py"):
            continue
        target = package / path.name
        target.write_bytes(path.read_bytes())
        target.chmod(0o644)
    return package


class WorkerBroken(SandboxError):
    """A worker stopped following the control protocol; it is destroyed and replaced."""


class WorkerTampered(WorkerBroken):
    """A worker found itself changed (by an earlier run) before forking a run: the run never started."""


class Worker:
    """One sandboxed zygote (see module docstring). Blocking methods; one run at a time."""

    def __init__(self, sandbox: Sandbox, interpreter: str, role: str, spec_extra: dict | None = None,
                 preload: tuple[str, ...] = ()) -> None:
        self.sandbox, self.interpreter, self.role = sandbox, interpreter, role
        self.spec_extra: dict = dict(spec_extra or {})
        """Merged into every run's spec: the environment's ``sys_path`` and ``node_path`` (the
        directories this worker's sandbox mounts read-only, ``sandbox.extra_ro_paths``)."""
        self.preload = preload
        """Read-only directories whose pytest the zygote imports before its first fork (a test worker of
        a pool for pytest tests): only their code runs there, never a task's or a candidate's."""
        self.proc: subprocess.Popen | None = None
        self.sock: socket.socket | None = None
        self._buf = bytearray()
        self._slot: slots.Slot | None = None
        self._base: Path | None = None
        self._cgroup: RunCgroup | None = None
        self._mounted = False
        self.runs = 0

    # -- lifecycle -------------------------------------------------------------------------
    def start(self) -> None:
        sb = self.sandbox
        limits = SandboxLimits(timeout_s=WORKER_LIFETIME_S, memory_mb=sb.limits.memory_mb,
                               max_pids=sb.limits.max_pids, output_limit_bytes=sb.limits.output_limit_bytes,
                               disk_mb=sb.limits.disk_mb, open_files=sb.limits.open_files)
        self._slot = slots.claim_slot()
        uid = self._slot.uid if self._slot else None
        self._base = base = Path(tempfile.mkdtemp(prefix=f"oracle-worker-{uid if uid is not None else 'u'}-"))
        src, work = base / "src", base / "work"
        src.mkdir(mode=0o755)
        work.mkdir(mode=0o700)
        install_runtime(src)
        if uid is not None:
            os.chown(base, uid, uid)
            os.chown(work, uid, uid)
        namespaces = sb.isolation_level == "namespaces"
        if not namespaces and slots.can_drop_privileges():
            self._mounted = mount_tmpfs(str(work), limits.disk_mb * 1024 * 1024, uid)
        os.chmod(base, 0o711)
        src_path, work_path = (SANDBOX_SRC, SANDBOX_WORK) if namespaces else (str(src), str(work))
        parent_sock, child_sock = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        child_fd = child_sock.fileno()
        env = {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": work_path, "TMPDIR": work_path,
               "LANG": "C.UTF-8", "PYTHONDONTWRITEBYTECODE": "1", "PYTHONIOENCODING": "utf-8",
               "OPENSSL_CONF": "/dev/null"}  # node reads /etc/ssl at start; /etc is not in the sandbox
        # Inside a namespace sandbox /dev/shm is the sandbox's own: emptied after every run like /work.
        scratch = [work_path] + (["/dev/shm"] if namespaces else [])
        # -E -s as -I, but not -P: -m puts the start directory (the read-only copy's parent) on sys.path.
        command = [self.interpreter, "-E", "-s", "-m", ZYGOTE_MODULE, str(child_fd), ":".join(scratch)]
        if self.preload:
            command.append(":".join(self.preload))
        exe = sb.layers.available.get(sb.backend, "")
        filter_fd = seccomp.filter_fd() if sb.backend == "bubblewrap" else None
        inherited = (child_fd,) if filter_fd is None else (child_fd, filter_fd)
        argv = build_command(sb.backend, exe, command, src_dir=str(src), limits=limits, layers=sb.layers,
                             extra_ro=sb.extra_ro_paths, env=env, pass_fds=(child_fd,), seccomp_fd=filter_fd,
                             cwd=SANDBOX_SRC)
        confinement = None
        if sb.backend == "landlock":
            read = ["/usr", *[d for d in SYSTEM_DIRS if os.path.exists(d)], *sb.extra_ro_paths, str(src),
                    "/dev/urandom", "/dev/null", "/proc"]
            confinement = PreparedConfinement(sb.layers.landlock_abi, read, [str(work)])
            confinement.open_paths()
        self._cgroup = RunCgroup(sb.layers.cgroups, limits.memory_mb * 1024 * 1024, limits.max_pids, slot_uid=uid)
        self._cgroup.create()
        hook = make_preexec(uid=uid, procs_files=self._cgroup.procs_files, limits=limits, confinement=confinement,
                            set_address_limit=not sb.layers.cgroups.memory and not namespaces,
                            seccomp_filter=seccomp.PreparedFilter() if sb.backend == "rlimits" else None)
        log = open(base / "worker.log", "wb")  # noqa: SIM115 - closed below once the worker has it
        try:
            self.proc = subprocess.Popen(
                argv, stdin=subprocess.DEVNULL, stdout=log, stderr=log, pass_fds=inherited,
                preexec_fn=hook, start_new_session=True, cwd=str(src) if not namespaces else "/",
                env=env if not namespaces else {"PATH": "/usr/bin:/bin"})
        except (OSError, subprocess.SubprocessError) as exc:
            raise SandboxError(f"{sb.backend}: cannot start a sandbox worker: {exc}") from exc
        finally:
            log.close()
            child_sock.close()
            if filter_fd is not None:
                os.close(filter_fd)
            if confinement is not None:
                confinement.close_paths()
        self.sock = parent_sock
        try:
            ready = self.recv(time.monotonic() + START_TIMEOUT_S)
        except WorkerBroken as exc:
            tail = self.log_tail()
            self.destroy()
            raise SandboxError(f"{sb.backend}: the sandbox worker did not start ({exc}): "
                               f"{tail or 'no output'}") from None
        if ready.get("op") != "ready":
            self.destroy()
            raise SandboxError(f"{sb.backend}: the sandbox worker said {ready.get('op')!r} instead of ready")

    def log_tail(self, limit: int = 600) -> str:
        try:
            text = (self._base / "worker.log").read_bytes().decode(errors="replace").strip()  # type: ignore[operator]
        except (OSError, TypeError):
            return ""
        return text[-limit:]

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None and self.sock is not None

    def destroy(self) -> None:
        """Kill the whole sandbox (every process of its cgroup and slot uid) and remove its files."""
        if self.sock is not None:
            self.sock.close()
            self.sock = None
        if self.proc is not None:
            try:
                os.killpg(self.proc.pid, 9)
            except (ProcessLookupError, PermissionError):
                pass
            try:
                self.proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                pass
        if self._cgroup is not None:
            self._cgroup.kill_and_remove()
        if self._slot is not None:
            slots.kill_until_gone(lambda: slots.processes_of_uid(self._slot.uid), timeout_s=2.0)  # type: ignore[union-attr]
            if self.sandbox.isolation_level != "namespaces":  # the host's IPC space: nothing may outlive it
                worker_state.remove_sysv(worker_state.sysv_objects(self._slot.uid))
        if self._mounted and self._base is not None:
            unmount(str(self._base / "work"))
            self._mounted = False
        if self._base is not None:
            shutil.rmtree(self._base, ignore_errors=True)
            self._base = None
        if self._slot is not None:
            self._slot.release()
            self._slot = None
        self.proc = None

    # -- control protocol ------------------------------------------------------------------
    def send(self, message: dict, fds: tuple[int, ...] = ()) -> None:
        frame = wire.dumps(message)
        try:
            if fds:  # one sendmsg with the descriptors (one wakeup of the worker); the rest, if any, after
                sent = socket.send_fds(self.sock, [frame], list(fds))  # type: ignore[arg-type]
                if sent < len(frame):
                    self.sock.sendall(frame[sent:])  # type: ignore[union-attr]
            else:
                self.sock.sendall(frame)  # type: ignore[union-attr]
        except (OSError, AttributeError) as exc:
            raise WorkerBroken(f"the {self.role} worker's control socket failed: {exc}") from None

    def take(self) -> dict | None:
        """A complete message already buffered, if any."""
        if len(self._buf) < 4:
            return None
        (size,) = _HEADER.unpack(bytes(self._buf[:4]))
        if size > wire.MAX_FRAME:
            raise WorkerBroken(f"the {self.role} worker sent an oversized control message")
        if len(self._buf) < 4 + size:
            return None
        body = bytes(self._buf[4:4 + size])
        del self._buf[:4 + size]
        try:
            return wire.loads(body)
        except wire.ChannelError as exc:
            raise WorkerBroken(f"the {self.role} worker sent a bad control message: {exc}") from None

    def pump(self) -> None:
        """Read what the control socket has (call when poll says it is readable)."""
        try:
            chunk = self.sock.recv(65536)  # type: ignore[union-attr]
        except OSError as exc:
            raise WorkerBroken(f"the {self.role} worker's control socket failed: {exc}") from None
        if not chunk:
            raise WorkerBroken(f"the {self.role} worker ended unexpectedly")
        self._buf += chunk

    def recv(self, deadline: float) -> dict:
        while True:
            message = self.take()
            if message is not None:
                return message
            left = deadline - time.monotonic()
            if left <= 0:
                raise WorkerBroken(f"the {self.role} worker did not answer in time")
            ready, _, _ = select.select([self.sock], [], [], left)  # type: ignore[type-var]
            if ready:
                self.pump()

    def oom_kills(self) -> int:
        return self._cgroup._oom_kills() if self._cgroup is not None else 0


class WorkerPool:
    """``size`` pairs of workers (candidate side, test side), started on first use, reused across
    tasks and event loops, replaced when broken. Thread-safe; runs happen in worker threads."""

    def __init__(self, sandbox: Sandbox, interpreter: str, size: int, *, sys_path: tuple[str, ...] = (),
                 node_path: str | None = None, test_preload: tuple[str, ...] = ()) -> None:
        self.sandbox, self.interpreter, self.size = sandbox, interpreter, max(1, size)
        self.spec_extra: dict = {}
        """What every run of this pool gets in its spec: the environment's site-packages first on
        ``sys.path`` (both sides), its ``node_modules`` as ``NODE_PATH``. The sandbox must mount them."""
        if sys_path:
            self.spec_extra["sys_path"] = list(sys_path)
        if node_path:
            self.spec_extra["node_path"] = node_path
        self.test_preload = test_preload
        """Directories (among the sandbox's read-only paths) whose pytest the test workers preload."""
        self._idle: list[tuple[Worker, Worker]] = []
        self._all: set[Worker] = set()
        self._lock = threading.Lock()
        self._free = threading.Semaphore(self.size)
        self.closed = False
        self.started_workers = 0
        self.executor = ThreadPoolExecutor(self.size, thread_name_prefix="oracle-verifier")
        self._gate = threading.Condition()
        self._running = 0
        self._exclusive_waiting = 0
        self._exclusive = False

    @contextmanager
    def shared(self) -> Iterator[None]:
        """Hold while running alongside other runs (waits while a run has the pool to itself)."""
        with self._gate:
            self._gate.wait_for(lambda: not self._exclusive and not self._exclusive_waiting)
            self._running += 1
        try:
            yield
        finally:
            with self._gate:
                self._running -= 1
                self._gate.notify_all()

    @contextmanager
    def exclusive(self) -> Iterator[None]:
        """Hold while running alone: after every run under way has ended, and before any other starts
        (a starved run's rerun, so that whatever starved it is over)."""
        with self._gate:
            self._exclusive_waiting += 1
            self._gate.wait_for(lambda: not self._exclusive and self._running == 0)
            self._exclusive_waiting -= 1
            self._exclusive = True
        try:
            yield
        finally:
            with self._gate:
                self._exclusive = False
                self._gate.notify_all()

    def _new_pair(self) -> tuple[Worker, Worker]:
        pair = (Worker(self.sandbox, self.interpreter, "candidate", self.spec_extra),
                Worker(self.sandbox, self.interpreter, "test", self.spec_extra, preload=self.test_preload))
        try:
            for w in pair:
                w.start()
                with self._lock:
                    self._all.add(w)
                    self.started_workers += 1
        except BaseException:
            for w in pair:
                w.destroy()
            raise
        return pair

    def acquire(self) -> tuple[Worker, Worker]:
        self._free.acquire()
        try:
            with self._lock:
                if self.closed:
                    raise SandboxError("the verifier's worker pool is closed")
                pair = self._idle.pop() if self._idle else None
            if pair is not None and all(w.alive() for w in pair):
                return pair
            if pair is not None:
                self.discard(pair)
            return self._new_pair()
        except BaseException:
            self._free.release()
            raise

    def release(self, pair: tuple[Worker, Worker], broken: bool) -> None:
        try:
            if broken or self.closed or not all(w.alive() for w in pair):
                self.discard(pair)
            else:
                with self._lock:
                    self._idle.append(pair)
        finally:
            self._free.release()

    def discard(self, pair: tuple[Worker, Worker]) -> None:
        for w in pair:
            w.destroy()
            with self._lock:
                self._all.discard(w)

    def close(self) -> None:
        """Destroy every worker; later acquires fail."""
        with self._lock:
            self.closed = True
            workers = list(self._all)
            self._all.clear()
            self._idle.clear()
        for w in workers:
            w.destroy()
        self.executor.shutdown(wait=False, cancel_futures=True)
