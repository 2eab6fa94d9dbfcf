"""oracle-router: decide how an AI output should be evaluated, then evaluate it.

    from oracle import Oracle, OracleConfig
    result = Oracle(OracleConfig.load()).evaluate(task_dict)   # or await oracle.aevaluate(...)

Only the names below are public; everything else is reachable through submodules and may change.
They are imported on first use (module ``__getattr__``), so ``import oracle`` stays cheap: it loads
none of httpx, numpy, networkx or asyncio until a name that needs them is used.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

__all__ = [
    "Escalation",
    "EvaluationResult",
    "Oracle",
    "OracleConfig",
    "OracleError",
    "OracleResult",
    "Policy",
    "Route",
    "Status",
    "Strategy",
    "Task",
    "Trajectory",
]

__version__ = "0.1.0"

_WHERE = {
    "Escalation": "oracle.result",
    "EvaluationResult": "oracle.result",
    "Oracle": "oracle.oracle",
    "OracleConfig": "oracle.config",
    "OracleError": "oracle.errors",
    "OracleResult": "oracle.result",
    "Policy": "oracle.policy",
    "Route": "oracle.route",
    "Status": "oracle.result",
    "Strategy": "oracle.strategy",
    "Task": "oracle.task",
    "Trajectory": "oracle.task",
}

if TYPE_CHECKING:
    from oracle.config import OracleConfig
    from oracle.errors import OracleError
    from oracle.oracle import Oracle
    from oracle.policy import Policy
    from oracle.result import Escalation, EvaluationResult, OracleResult, Status
    from oracle.route import Route
    from oracle.strategy import Strategy
    from oracle.task import Task, Trajectory


def __getattr__(name: str) -> Any:
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module 'oracle' has no attribute {name!r}")
    value = getattr(import_module(module), name)
    globals()[name] = value  # later lookups skip this function
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
