"""A real two-node Ray cluster on the loopback interface, started and stopped by a test.

Each node is its own ``ray start --block`` process (the head, then one worker joining it), in a new
session of its own, so the test can end exactly the processes it started: SIGTERM to the worker's
``ray start`` process, then to the head's (Ray drains and stops the node's raylet, GCS, agents and
workers), then SIGKILL to anything still left in those two sessions. Should the test process itself be killed,
the kernel sends each ``ray start`` a SIGTERM (PR_SET_PDEATHSIG), so no cluster outlives it.
``ray stop`` is never used: it stops every Ray process of the machine, other people's included.

The nodes use ``127.0.0.2``: Ray rewrites ``127.0.0.1`` and ``localhost`` into the machine's
outward-facing address (``resolve_ip_for_localhost``), while any other loopback address is kept as
given, so the whole cluster talks over loopback only. Every port is chosen free, never Ray's
fixed defaults, so two clusters on one machine do not collide. Ray's session folders (sockets
included) go to a short temporary folder removed at the end: a socket path under pytest's
``tmp_path`` passes the 107-byte limit of AF_UNIX addresses.
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

NODE_IP = "127.0.0.2"
WORKER_RESOURCE = "oracle_test_worker"
"""A custom resource only the worker node has: it tells the worker's node id apart."""

OBJECT_STORE_BYTES = 100 * 1024 * 1024
"""Per node; rows are small (Ray's minimum is about 75 MB)."""

_RAY_CLI = [sys.executable, "-c", "import sys; from ray.scripts.scripts import main; sys.argv[0] = 'ray'; main()"]


@dataclass(frozen=True)
class RayCluster:
    address: str
    head_node: str
    worker_node: str
    logs: tuple[Path, Path]

    def log_tail(self) -> str:
        return _tails(self.logs)


def _tails(logs: tuple[Path, ...], chars: int = 3000) -> str:
    """The end of each node's console log, for a failure message."""
    return "\n".join(f"--- {p.name}\n{p.read_text(errors='replace')[-chars:]}" for p in logs if p.exists())


def _free_ports(n: int) -> list[int]:
    """n distinct free ports on the node address (held open together, so none repeats)."""
    socks = []
    try:
        for _ in range(n):
            s = socket.socket()
            s.bind((NODE_IP, 0))
            socks.append(s)
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


def _node_ports() -> list[str]:
    manager, objects, agent_http, agent_grpc, runtime_env, metrics = _free_ports(6)
    return ["--node-manager-port", str(manager), "--object-manager-port", str(objects),
            "--dashboard-agent-listen-port", str(agent_http), "--dashboard-agent-grpc-port", str(agent_grpc),
            "--runtime-env-agent-port", str(runtime_env), "--metrics-export-port", str(metrics)]


def _die_with_parent() -> None:
    """Runs in the child before exec: SIGTERM when the test process goes away (Linux prctl)."""
    PR_SET_PDEATHSIG = 1
    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGTERM)


def _start_node(args: list[str], temp_dir: Path, log: Path) -> subprocess.Popen[bytes]:
    temp_dir.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ, RAY_USAGE_STATS_ENABLED="0")
    with log.open("wb") as out:
        return subprocess.Popen(
            _RAY_CLI + ["start", "--block", "--node-ip-address", NODE_IP, "--temp-dir", str(temp_dir),
                        "--object-store-memory", str(OBJECT_STORE_BYTES), "--disable-usage-stats",
                        "--include-log-monitor", "false"] + _node_ports() + args,
            stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT, env=env, start_new_session=True,
            preexec_fn=_die_with_parent)


def _session_members(sid: int) -> list[int]:
    """Processes still in the session that ``ray start`` opened (its raylet, agents, workers)."""
    pids = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2:].split()
        if int(fields[3]) == sid:  # state ppid pgrp session ...
            pids.append(int(entry.name))
    return pids


def _stop(proc: subprocess.Popen[bytes], grace_s: float = 40.0) -> None:
    """SIGTERM (Ray drains the node, up to 30 s, and stops its processes), then SIGKILL to whatever
    is left in the node's session (the session id is the pid of ``ray start``)."""
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(grace_s)
    for pid in _session_members(proc.pid):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(5)


def _wait_for_port(port: int, head: subprocess.Popen[bytes], deadline: float, log: Path) -> None:
    """Until the head's GCS accepts connections: the worker can start joining from then on."""
    while True:
        if head.poll() is not None:
            raise RuntimeError(f"the Ray head exited with {head.returncode}:\n{_tails((log,))}")
        try:
            socket.create_connection((NODE_IP, port), timeout=0.5).close()
            return
        except OSError:
            if time.monotonic() > deadline:
                raise TimeoutError(f"the Ray head's port {port} never opened:\n{_tails((log,))}")
            time.sleep(0.2)


def _wait_until_started(proc: subprocess.Popen[bytes], log: Path, deadline: float) -> None:
    """Until ``ray start`` has finished starting its node (it prints so, then blocks): a SIGTERM it
    receives earlier may wait in the middle of its start-up and leave the node running."""
    while "Ray runtime started." not in log.read_text(errors="replace"):
        if proc.poll() is not None:
            raise RuntimeError(f"ray start exited with {proc.returncode}:\n{_tails((log,))}")
        if time.monotonic() > deadline:
            raise TimeoutError(f"ray start did not finish starting:\n{_tails((log,))}")
        time.sleep(0.2)


def _wait_for_nodes(address: str, procs: list[subprocess.Popen[bytes]], logs: tuple[Path, Path],
                    deadline: float) -> tuple[str, str]:
    """Connect once, wait until both nodes are alive with their CPUs, return (head, worker) node ids."""
    import ray

    ray.init(address=address, log_to_driver=False, include_dashboard=False)
    try:
        while True:
            alive = [n for n in ray.nodes() if n["Alive"]]
            heads = [n["NodeID"] for n in alive if "node:__internal_head__" in n["Resources"]]
            workers = [n["NodeID"] for n in alive if WORKER_RESOURCE in n["Resources"]]
            if len(alive) == 2 and heads and workers and ray.cluster_resources().get("CPU", 0) >= 2:
                return heads[0], workers[0]
            dead = [p for p in procs if p.poll() is not None]
            if dead or time.monotonic() > deadline:
                raise RuntimeError(f"the two-node Ray cluster did not come up (alive: {len(alive)}):\n{_tails(logs)}")
            time.sleep(0.2)
    finally:
        ray.shutdown()


@contextlib.contextmanager
def local_ray_cluster(base: Path, *, head_cpus: int = 1, worker_cpus: int = 1,
                      start_timeout_s: float = 120.0) -> Iterator[RayCluster]:
    """A head and one worker node on the loopback interface; both stopped on exit, however it exits.

    ``base`` keeps the two nodes' console logs; Ray's own files live in a short temporary folder."""
    base.mkdir(parents=True, exist_ok=True)
    sessions = Path(tempfile.mkdtemp(prefix="oracle-ray-"))
    gcs_port, client_port, dashboard_port = _free_ports(3)
    logs = (base / "head.log", base / "worker.log")
    procs: list[subprocess.Popen[bytes]] = []
    deadline = time.monotonic() + start_timeout_s
    try:
        procs.append(_start_node(["--head", "--port", str(gcs_port), "--num-cpus", str(head_cpus),
                                  "--include-dashboard", "false", "--dashboard-port", str(dashboard_port),
                                  "--ray-client-server-port", str(client_port)], sessions / "h", logs[0]))
        _wait_for_port(gcs_port, procs[0], deadline, logs[0])
        address = f"{NODE_IP}:{gcs_port}"
        procs.append(_start_node(["--address", address, "--num-cpus", str(worker_cpus),
                                  "--resources", json.dumps({WORKER_RESOURCE: 1})], sessions / "w", logs[1]))
        for proc, log in zip(procs, logs):
            _wait_until_started(proc, log, deadline)
        head_node, worker_node = _wait_for_nodes(address, procs, logs, deadline)
        yield RayCluster(address=address, head_node=head_node, worker_node=worker_node, logs=logs)
    finally:
        try:
            for proc in reversed(procs):  # the worker first, while the head it drains against still runs
                _stop(proc)
        finally:
            shutil.rmtree(sessions, ignore_errors=True)
