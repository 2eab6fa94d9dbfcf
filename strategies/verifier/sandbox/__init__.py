"""The sandbox: one fresh, isolated process per run (see probe.py for the layers, runner.py for a run)."""

from strategies.verifier.sandbox.limits import SandboxLimits
from strategies.verifier.sandbox.layers import Layers, probe
from strategies.verifier.sandbox.runner import RunOutcome, RunRequest, Sandbox

__all__ = ["Layers", "RunOutcome", "RunRequest", "Sandbox", "SandboxLimits", "probe"]
