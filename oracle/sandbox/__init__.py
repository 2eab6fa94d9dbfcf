"""The sandbox: one fresh, isolated process per run (see probe.py for the layers, runner.py for a run)."""

from oracle.sandbox.limits import SandboxLimits
from oracle.sandbox.layers import Layers, probe
from oracle.sandbox.runner import RunOutcome, RunRequest, Sandbox

__all__ = ["Layers", "RunOutcome", "RunRequest", "Sandbox", "SandboxLimits", "probe"]
