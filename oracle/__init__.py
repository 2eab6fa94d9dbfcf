"""oracle-router: decide how an AI output should be evaluated, then evaluate it.

    from oracle import Oracle, OracleConfig
    result = Oracle(OracleConfig.load()).evaluate(task_dict)   # or: async with Oracle() as o: await o.aevaluate(...)

The names in ``__all__`` are public, and these modules (pinned by tests/test_public_api.py):

    oracle.errors                                    the error tree
    oracle.config  oracle.config.model               the one config object and its sections
    oracle.config.calibration                        calibration files
    oracle.tasks  oracle.tasks.task                  tasks and trajectories
    oracle.tasks.testspec  oracle.tasks.questions    test kinds, typed questions
    oracle.tasks.files                               reading task files
    oracle.tasks.environment                         what candidates run with (interpreter, requirements)
    oracle.tasks.repository  oracle.tasks.patch_text  a repository task's base, a candidate's change
    oracle.results  oracle.results.result            what an evaluation returns,
    oracle.results.concerns  oracle.results.provenance  oracle.results.ledger  oracle.results.verdict
                                                     with its concerns, provenance, call ledger and
                                                     the verdict on one candidate
    oracle.routing  oracle.routing.signals           what routing reads,
    oracle.routing.policy  oracle.routing.route      the policy protocol, the trace,
    oracle.routing.settings                          each policy's settings
    oracle.policies  oracle.policies.cues  oracle.policies.difficulty  oracle.policies.evidence
    oracle.policies.judgment  oracle.policies.questions
                                                     the built-in policies, one module per family
    oracle.strategies  oracle.strategies.protocol    the Evaluator protocol, EvaluationContext
    oracle.providers  oracle.providers.clients  oracle.providers.pool  oracle.providers.types
    oracle.providers.openai_chat  oracle.providers.anthropic  oracle.providers.decisions
    oracle.providers.prices  oracle.providers.budget model clients, wire formats, prices, budgets
    oracle.escalation  oracle.escalation.human  oracle.escalation.store  oracle.escalation.resume
                                                     asking a person, storing and resuming requests
    oracle.comparison  oracle.comparison.api  oracle.comparison.summary  oracle.comparison.records
                                                     research comparisons (compare, acompare)
    oracle.integrations  oracle.integrations.sample  oracle.integrations.inspect
    oracle.integrations.pydantic_evals  oracle.integrations.langsmith  oracle.integrations.deepeval
                                                     framework adapters (each an optional extra)
    oracle.integrations.opentelemetry                tracing scoped to a block (use_tracer_provider)
    oracle.local_model                               the embedded local model (local-model extra)

Every other module is private and may change without notice: its name or a parent package's starts
with an underscore (``oracle._oracle``, ``oracle.routing._chain``), or it is inside a package whose
docstring starts with "Private" (``oracle.batch``, ``oracle.calibrate``, ``oracle.cli``, ``oracle.repo``,
``oracle.rubrics``, ``oracle.sandbox``, ``oracle.serve``, ``oracle.view`` and the three built-in evaluators
``oracle.strategies.decision_judge``, ``oracle.strategies.llm_judge``, ``oracle.strategies.verifier``).
The module paths from before the package was regrouped (``oracle.task``, ``oracle.result``, ...) and
the names from before the evaluators had one word (``Strategy``, ``register_strategy``,
``Oracle.run_strategy``) still work, with a ``DeprecationWarning`` naming the new one.

Extension points: a routing policy is a class with ``vote(signals) -> Vote | None`` (subclass
``BasePolicy``, register with ``register_policy``); an evaluator is an object with ``name``,
``version``, ``spec(config)`` and ``async evaluate(EvaluationContext) -> EvaluationResult``
(``Evaluator``; register a factory with ``register_evaluator``, run it with
``Oracle.run_evaluator``). Third-party packages declare them as entry points (groups
``oracle_router.policies``, ``oracle_router.evaluators``, ``oracle_router.commands``).

Names are imported on first use (module ``__getattr__``), so ``import oracle`` stays cheap: it loads
none of httpx, numpy, networkx or asyncio until a name that needs them is used.
"""

import typing as _typing
from importlib import import_module as _import_module

from oracle._internal import moved as _moved

_moved.install()  # the module paths from before the regrouping still import (and warn)

__all__ = [
    "BasePolicy",
    "Budget",
    "BudgetExhausted",
    "ConfigError",
    "Escalation",
    "EvaluationContext",
    "EvaluationResult",
    "Evaluator",
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
    "Task",
    "TaskValidationError",
    "Trajectory",
    "Vote",
    "acompare",
    "compare",
    "register_evaluator",
    "register_policy",
]

from oracle._internal.version import __version__ as __version__  # noqa: E402 - after the moved-module hook

_WHERE = {
    "BasePolicy": "oracle.policies._base",
    "Budget": "oracle.providers.budget",
    "BudgetExhausted": "oracle.providers.budget",
    "ConfigError": "oracle.errors",
    "Escalation": "oracle.results.result",
    "EvaluationContext": "oracle.strategies.protocol",
    "EvaluationResult": "oracle.results.result",
    "Evaluator": "oracle.strategies.protocol",
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
    "Task": "oracle.tasks.task",
    "TaskValidationError": "oracle.errors",
    "Trajectory": "oracle.tasks.task",
    "Vote": "oracle.routing.route",
    "acompare": "oracle.comparison.api",
    "compare": "oracle.comparison.api",
    "register_evaluator": "oracle._evaluators",
    "register_policy": "oracle.policies",
}

_RENAMED = {"Strategy": "Evaluator", "register_strategy": "register_evaluator"}
"""Deprecated names (before the evaluators had one word): they warn and give the new object."""

if _typing.TYPE_CHECKING:
    from oracle.comparison.api import acompare, compare
    from oracle.config.model import OracleConfig
    from oracle.errors import ConfigError, OracleError, PluginError, TaskValidationError
    from oracle._oracle import Oracle
    from oracle.policies import register_policy
    from oracle.policies._base import BasePolicy
    from oracle.routing.policy import Policy
    from oracle.providers.budget import Budget, BudgetExhausted
    from oracle.providers.pool import ProviderPool
    from oracle.results.result import Escalation, EvaluationResult, OracleResult, Status
    from oracle.routing.route import Route, Vote
    from oracle.routing.signals import Signals
    from oracle._evaluators import register_evaluator
    from oracle._evaluators import register_evaluator as register_strategy  # noqa: F401 - deprecated name
    from oracle.strategies.protocol import EvaluationContext, Evaluator
    from oracle.strategies.protocol import Evaluator as Strategy  # noqa: F401 - deprecated name
    from oracle.tasks.task import Task, Trajectory


def __getattr__(name: str) -> _typing.Any:
    module = _WHERE.get(name)
    if module is None and name in _RENAMED:
        _moved.renamed(f"oracle.{name}", f"oracle.{_RENAMED[name]}")
        return __getattr__(_RENAMED[name])
    if module is None:
        raise AttributeError(f"module 'oracle' has no attribute {name!r}")
    value = getattr(_import_module(module), name)
    globals()[name] = value  # later lookups skip this function
    return value


def __dir__() -> list[str]:
    """The public names only: submodules Python binds here on import are not part of the API."""
    return sorted(__all__)
