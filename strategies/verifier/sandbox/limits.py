"""Resource limits of one sandbox run (a small value object; defaults come from VerifierConfig)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class SandboxLimits:
    """Limits applied to every run; the wall-clock timeout is per run (per test)."""

    timeout_s: float = 10.0
    memory_mb: int = 1024
    """cgroup memory limit (all processes of the run together); RLIMIT_AS when there is no cgroup."""
    max_pids: int = 64
    output_limit_bytes: int = 1_000_000
    """Per stream (stdout, stderr); beyond it the run is killed and marked truncated."""
    disk_mb: int = 64
    """Size of the writable work dir (tmpfs) and RLIMIT_FSIZE."""
    open_files: int = 256
