"""oracle-router: decide how an AI output should be evaluated, then evaluate it.

    from oracle import Oracle, OracleConfig
    result = Oracle(OracleConfig.load()).evaluate(task_dict)   # or: async with Oracle() as o: await o.aevaluate(...)

Only the names in ``__all__`` are public, plus the modules ``oracle.config.model``, ``oracle.errors``,
``oracle.tasks.task``, ``oracle.tasks.files``, ``oracle.results.result``, ``oracle.routing.route``, ``oracle.routing.signals``,
``oracle.strategies.protocol``, ``oracle.routing.policy``, ``oracle.policies``, ``oracle.results.concerns``,
``oracle.results.provenance``, ``oracle.results.ledger`` (what an evaluator reports: typed concerns, provenance and
its call ledger), ``oracle.providers.prices``, ``oracle.providers``, ``oracle.integrations`` and (with the
local-model extra) ``oracle.local_model``; anything else may change without notice (the internal
subpackages ``oracle.routing`` and ``oracle.escalation``, and the ``oracle._*`` modules among them).
Extension points: a routing policy is a class with ``vote(signals)
-> Vote | None`` (subclass ``BasePolicy``, register with ``register_policy``); an evaluator is an
object with ``spec(config)`` and ``async evaluate(EvaluationContext) -> EvaluationResult``
(register a factory with ``register_strategy``). Third-party packages declare them as entry points
(groups ``oracle_router.policies``, ``oracle_router.evaluators``, ``oracle_router.commands``).

Names are imported on first use (module ``__getattr__``), so ``import oracle`` stays cheap: it loads
none of httpx, numpy, networkx or asyncio until a name that needs them is used.
"""

import typing as _typing
from importlib import import_module as _import_module

__all__ = [
    "BasePolicy",
    "ConfigError",
    "Escalation",
    "EvaluationContext",
    "EvaluationResult",
    "Oracle",
    "OracleConfig",
    "OracleError",
    "OracleResult",
    "PluginError",
    "Policy",
    "ProviderPool",
    "Route",
    "Signals",
    "Status",
    "Strategy",
    "Task",
    "TaskValidationError",
    "Trajectory",
    "Vote",
    "acompare",
    "compare",
    "register_policy",
    "register_strategy",
]

from oracle._internal.version import __version__

_WHERE = {
    "BasePolicy": "oracle.policies._base",
    "ConfigError": "oracle.errors",
    "Escalation": "oracle.results.result",
    "EvaluationContext": "oracle.strategies.protocol",
    "EvaluationResult": "oracle.results.result",
    "Oracle": "oracle._oracle",
    "OracleConfig": "oracle.config.model",
    "OracleError": "oracle.errors",
    "OracleResult": "oracle.results.result",
    "PluginError": "oracle.errors",
    "Policy": "oracle.routing.policy",
    "ProviderPool": "oracle.providers.pool",
    "Route": "oracle.routing.route",
    "Signals": "oracle.routing.signals",
    "Status": "oracle.results.result",
    "Strategy": "oracle.strategies.protocol",
    "Task": "oracle.tasks.task",
    "TaskValidationError": "oracle.errors",
    "Trajectory": "oracle.tasks.task",
    "Vote": "oracle.routing.route",
    "acompare": "oracle.comparison.api",
    "compare": "oracle.comparison.api",
    "register_policy": "oracle.policies",
    "register_strategy": "oracle.strategies.protocol",
}

if _typing.TYPE_CHECKING:
    from oracle.comparison.api import acompare, compare
    from oracle.config.model import OracleConfig
    from oracle.errors import ConfigError, OracleError, PluginError, TaskValidationError
    from oracle._oracle import Oracle
    from oracle.policies import register_policy
    from oracle.policies._base import BasePolicy
    from oracle.routing.policy import Policy
    from oracle.providers.pool import ProviderPool
    from oracle.results.result import Escalation, EvaluationResult, OracleResult, Status
    from oracle.routing.route import Route, Vote
    from oracle.routing.signals import Signals
    from oracle.strategies.protocol import EvaluationContext, Strategy, register_strategy
    from oracle.tasks.task import Task, Trajectory


def __getattr__(name: str) -> _typing.Any:
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module 'oracle' has no attribute {name!r}")
    value = getattr(_import_module(module), name)
    globals()[name] = value  # later lookups skip this function
    return value


def __dir__() -> list[str]:
    """The public names only: submodules Python binds here on import are not part of the API."""
    return sorted(__all__)
