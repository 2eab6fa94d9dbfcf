"""Resource limits of one sandbox run (a small value object; defaults come from VerifierConfig)."""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import Any, Sequence


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

    def for_timeout(self, timeout_s: float | None) -> SandboxLimits:
        """These limits for one run with its own wall-clock limit (None: the default).

        Everything derived from the timeout (nsjail's --time_limit, RLIMIT_CPU) must come from
        the run's limit, or a test allowed 60 s is cut at the default's bound.
        """
        if timeout_s is None or timeout_s == self.timeout_s:
            return self
        return dataclasses.replace(self, timeout_s=timeout_s)

    @property
    def cpu_seconds(self) -> int:
        """RLIMIT_CPU: twice the wall-clock limit (a run's threads may use both cores), at least 1 s."""
        return int(self.timeout_s * 2) + 1


def check_timeouts(tests: Sequence[Any], cfg: Any) -> str | None:
    """The first test whose own ``timeout_s`` exceeds ``cfg.max_timeout_s``, as a message; else None.

    A test asking for more than the configured ceiling is bad input (the caller raises
    TaskValidationError with this text), not something to cut silently at the ceiling.
    """
    ceiling = float(cfg.max_timeout_s)
    for i, test in enumerate(tests):
        value = getattr(test, "timeout_s", None)
        if value is None:
            continue
        if not math.isfinite(value) or value <= 0 or value > ceiling:
            return (f"task.tests[{i}].timeout_s: {value:g} s is not allowed; tests may ask for "
                    f"more than 0 and at most verifier.max_timeout_s = {ceiling:g} s")
    return None
