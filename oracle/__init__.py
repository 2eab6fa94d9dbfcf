"""oracle-router: decide how an AI output should be evaluated, then evaluate it.

    from oracle import Oracle, OracleConfig
    result = Oracle(OracleConfig.load()).evaluate(task_dict)   # or await oracle.aevaluate(...)

Only the names below are public; everything else is reachable through submodules and may change.
"""

from oracle.config import OracleConfig
from oracle.errors import OracleError
from oracle.oracle import Oracle
from oracle.policy import Policy
from oracle.result import Escalation, EvaluationResult, OracleResult, Status
from oracle.route import Route
from oracle.strategy import Strategy
from oracle.task import Task, Trajectory

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
