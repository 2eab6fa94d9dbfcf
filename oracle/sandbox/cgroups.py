"""Per-run cgroups: the only layer that bounds memory across processes and catches daemons, and
gives each run its fair share of the CPU.

A run gets its own group (v1: one per controller, memory and pids; v2: one unified group). Groups
are kept per slot uid and reused (only one run holds a slot at a time): the first attach to a fresh
memory cgroup costs about 20 ms on v1, a reused one well under 1 ms. The
pre-exec hook writes the child's pid into ``cgroup.procs`` before exec, so every process the
candidate starts is born inside the group. After the run every member is killed (``cgroup.kill``
on v2, a SIGKILL sweep on v1) and the group removed; the peak memory is read first so a result can
say "memory limit exceeded" with evidence.

CPU: every group gets the same weight (v1 ``cpu.shares``, v2 ``cpu.weight``), so under contention
a run that spins in many processes gets no more CPU than a run with one thread, and cannot starve a
sibling run into a timeout. No quota: bandwidth control costs every context switch, and the weight
already bounds a run whenever anything else wants the CPU. The groups' common parent weighs as much
as one ordinary process per CPU (``PARENT_WEIGHT_PER_CPU``): with the default weight of one process,
every run of the machine together would get one process's share next to the machine's other work
(on a busy machine, a fraction of one CPU for all of them, and honest runs judged starved).
"""

from __future__ import annotations

import os
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path

from oracle.sandbox.slots import kill_until_gone

CGROUP_ROOT = Path("/sys/fs/cgroup")
GROUP_PREFIX = "oracle-sandbox"
PARENT_WEIGHT_PER_CPU = {1: ("cpu.shares", 1024, 262144), 2: ("cpu.weight", 100, 10000)}
"""Per cgroup version: the parent's weight file, one ordinary process's weight, the largest allowed."""


def weigh_parent(support: CgroupSupport) -> None:
    """Give the runs' common parent group the weight of one ordinary process per CPU (module docstring)."""
    if support.cpu_parent is None or support.version not in PARENT_WEIGHT_PER_CPU:
        return
    fname, one, most = PARENT_WEIGHT_PER_CPU[support.version]
    try:
        (support.cpu_parent / fname).write_text(str(min(most, one * (os.cpu_count() or 1))))
    except OSError:
        pass  # not ours to weigh (a parent we may create groups in but not change): the slots still share fairly


@dataclass(frozen=True)
class CgroupSupport:
    """Which controllers this process can create groups in, and where."""

    version: int | None = None
    memory_parent: Path | None = None
    pids_parent: Path | None = None
    cpu_parent: Path | None = None

    @property
    def memory(self) -> bool:
        return self.memory_parent is not None

    @property
    def pids(self) -> bool:
        return self.pids_parent is not None

    @property
    def cpu(self) -> bool:
        return self.cpu_parent is not None


def _own_path(controller: str) -> str:
    try:
        for line in Path("/proc/self/cgroup").read_text().splitlines():
            _, ctrls, path = line.split(":", 2)
            if controller in ctrls.split(",") or (controller == "" and ctrls == ""):
                return path
    except OSError:
        pass
    return "/"


def _writable_parent(mount: Path, own: str) -> Path | None:
    """Our own group if visible in this mount, else the mount root; None unless mkdir works there."""
    candidates = [mount / own.lstrip("/"), mount] if own not in ("", "/") else [mount]
    for base in candidates:
        if not base.is_dir():
            continue
        parent = base / GROUP_PREFIX
        try:
            parent.mkdir(exist_ok=True)
            probe = parent / f"probe-{os.getpid()}-{uuid.uuid4().hex[:6]}"
            probe.mkdir()
            probe.rmdir()
            return parent
        except OSError:
            continue
    return None


def detect() -> CgroupSupport:
    """Find writable memory and pids controllers (v1 hierarchies or the v2 unified tree)."""
    if (CGROUP_ROOT / "memory").is_dir() or (CGROUP_ROOT / "pids").is_dir():
        mem = _writable_parent(CGROUP_ROOT / "memory", _own_path("memory")) \
            if (CGROUP_ROOT / "memory" / "memory.limit_in_bytes").exists() else None
        pids = _writable_parent(CGROUP_ROOT / "pids", _own_path("pids")) \
            if (CGROUP_ROOT / "pids").is_dir() else None
        cpu = _writable_parent(CGROUP_ROOT / "cpu", _own_path("cpu")) \
            if (CGROUP_ROOT / "cpu" / "cpu.shares").exists() else None
        if mem or pids:
            return CgroupSupport(version=1, memory_parent=mem, pids_parent=pids, cpu_parent=cpu)
    if (CGROUP_ROOT / "cgroup.controllers").exists():
        controllers = (CGROUP_ROOT / "cgroup.controllers").read_text().split()
        parent = _writable_parent(CGROUP_ROOT, _own_path(""))
        if parent is not None:
            try:  # v2: controllers must be enabled for the children of our parent group
                (parent / "cgroup.subtree_control").write_text("+memory +pids")
            except OSError:
                pass
            try:
                (parent / "cgroup.subtree_control").write_text("+cpu")
            except OSError:
                pass
            enabled = (parent / "cgroup.subtree_control").read_text().split() \
                if (parent / "cgroup.subtree_control").exists() else []
            return CgroupSupport(version=2,
                                 memory_parent=parent if "memory" in enabled and "memory" in controllers else None,
                                 pids_parent=parent if "pids" in enabled else None,
                                 cpu_parent=parent if "cpu" in enabled else None)
    return CgroupSupport()


@dataclass
class RunCgroup:
    """The groups of one run; ``procs_files`` are what the pre-exec hook writes its pid into."""

    support: CgroupSupport
    memory_limit_bytes: int
    max_pids: int
    slot_uid: int | None = None
    """Reuse the slot's group (kept between runs); None: a one-off group removed after the run."""
    dirs: list[Path] = field(default_factory=list)
    procs_files: list[str] = field(default_factory=list)
    _oom_baseline: int = 0
    _oom_fds: list[int] = field(default_factory=list)
    """The groups' OOM counters, open from create to kill_and_remove: read after every run (an open
    of a cgroup file costs tens of microseconds, a read at offset 0 a few)."""

    def _mkdir(self, d: Path) -> None:
        if self.slot_uid is None:
            d.mkdir()
            return
        d.mkdir(exist_ok=True)
        for fname, value in (("memory.max_usage_in_bytes", "0"), ("memory.failcnt", "0"),
                             ("memory.memsw.max_usage_in_bytes", "0")):
            if (d / fname).exists():  # v1 counters can be reset; v2's memory.events cannot
                try:
                    (d / fname).write_text(value)
                except OSError:
                    pass

    def create(self) -> None:
        self._create()
        for d in self.dirs:
            for fname in ("memory.oom_control", "memory.events"):
                try:
                    self._oom_fds.append(os.open(d / fname, os.O_RDONLY | os.O_CLOEXEC))
                except OSError:
                    continue
        self._oom_baseline = self._oom_kills()

    def _create(self) -> None:
        name = f"slot-{self.slot_uid}" if self.slot_uid is not None else \
            f"run-{os.getpid()}-{uuid.uuid4().hex[:10]}"
        s = self.support
        weigh_parent(s)
        if s.version == 2:
            parent = s.memory_parent or s.pids_parent
            if parent is None:
                return
            d = parent / name
            self._mkdir(d)
            self.dirs.append(d)
            if s.memory:
                (d / "memory.max").write_text(str(self.memory_limit_bytes))
                if (d / "memory.swap.max").exists():
                    (d / "memory.swap.max").write_text("0")
            if s.pids:
                (d / "pids.max").write_text(str(self.max_pids))
            if s.cpu:
                (d / "cpu.weight").write_text("100")
                (d / "cpu.max").write_text("max")
            self.procs_files.append(str(d / "cgroup.procs"))
            return
        if s.memory_parent is not None:
            d = s.memory_parent / name
            self._mkdir(d)
            self.dirs.append(d)
            if (d / "memory.memsw.limit_in_bytes").exists():  # memsw must stay >= limit: lower it first
                try:
                    (d / "memory.memsw.limit_in_bytes").write_text(str(self.memory_limit_bytes))
                except OSError:
                    pass
            (d / "memory.limit_in_bytes").write_text(str(self.memory_limit_bytes))
            if (d / "memory.memsw.limit_in_bytes").exists():
                (d / "memory.memsw.limit_in_bytes").write_text(str(self.memory_limit_bytes))
            self.procs_files.append(str(d / "cgroup.procs"))
        if s.pids_parent is not None:
            d = s.pids_parent / name
            self._mkdir(d)
            self.dirs.append(d)
            (d / "pids.max").write_text(str(self.max_pids))
            self.procs_files.append(str(d / "cgroup.procs"))
        if s.cpu_parent is not None:
            d = s.cpu_parent / name
            self._mkdir(d)
            self.dirs.append(d)
            (d / "cpu.shares").write_text("1024")
            (d / "cpu.cfs_quota_us").write_text("-1")  # weight only (module docstring)
            self.procs_files.append(str(d / "cgroup.procs"))

    def memory_peak_bytes(self) -> int | None:
        for d in self.dirs:
            for fname in ("memory.max_usage_in_bytes", "memory.peak"):
                if (d / fname).exists():
                    try:
                        return int((d / fname).read_text().strip())
                    except (OSError, ValueError):
                        return None
        return None

    def _oom_kills(self) -> int:
        """Cumulative OOM kills of the group (v1 memory.oom_control, v2 memory.events)."""
        total = 0
        for fd in self._oom_fds:
            try:
                for line in os.pread(fd, 4096, 0).splitlines():
                    key, _, value = line.partition(b" ")
                    if key == b"oom_kill":
                        total += int(value)
            except (OSError, ValueError):
                continue
        return total

    def memory_limit_hit(self) -> bool:
        """OOM kills since the run started, or usage that reached the limit."""
        if self._oom_kills() > self._oom_baseline:
            return True
        peak = self.memory_peak_bytes()
        return peak is not None and peak >= self.memory_limit_bytes

    def members(self) -> list[int]:
        pids: set[int] = set()
        for f in self.procs_files:
            try:
                pids.update(int(p) for p in Path(f).read_text().split())
            except (OSError, ValueError):
                continue
        return sorted(pids)

    def kill_and_remove(self, deadline_s: float = 5.0) -> list[int]:
        """Kill every member, wait until the groups are empty, remove one-off groups; returns pids killed."""
        killed: list[int] = []
        end = time.monotonic() + deadline_s
        for d in self.dirs:
            if (d / "cgroup.kill").exists():
                try:
                    (d / "cgroup.kill").write_text("1")
                except OSError:
                    pass
        killed += kill_until_gone(self.members, timeout_s=max(0.0, end - time.monotonic()))
        for d in self.dirs if self.slot_uid is None else []:
            for _ in range(200):
                try:
                    d.rmdir()
                    break
                except FileNotFoundError:
                    break
                except OSError:  # busy until the killed tasks are reaped by the kernel
                    time.sleep(0.005)
        for fd in self._oom_fds:
            os.close(fd)
        self._oom_fds.clear()
        return sorted(set(killed))
