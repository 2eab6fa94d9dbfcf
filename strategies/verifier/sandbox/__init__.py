"""The sandbox: one fresh, isolated process per run (see probe.py for the layers, runner.py for a run)."""

from oracle.strategies.verifier.sandbox.limits import SandboxLimits
from oracle.strategies.verifier.sandbox.layers import Layers, probe
from oracle.strategies.verifier.sandbox.runner import RunOutcome, RunRequest, Sandbox

__all__ = ["Layers", "RunOutcome", "RunRequest", "Sandbox", "SandboxLimits", "probe"]
