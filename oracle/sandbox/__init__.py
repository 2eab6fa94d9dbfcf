"""Private: the sandbox, one fresh, isolated process per run (layers.py for the layers, runner.py
for a run, runtime/ for the programs inside)."""

from oracle.sandbox.limits import SandboxLimits
from oracle.sandbox.layers import Layers, probe
from oracle.sandbox.runner import RunOutcome, RunRequest, Sandbox

__all__ = ["Layers", "RunOutcome", "RunRequest", "Sandbox", "SandboxLimits", "probe"]
