"""The strategy protocol and the registry of evaluators.

A strategy has one async method, ``evaluate(ctx) -> EvaluationResult``. ``EvaluationContext`` is a
frozen keyword-only object, so fields can be added later without breaking any strategy. Strategies
register by kind with ``@register_strategy``; only evaluators that really work are registered, and
an unregistered kind yields a ``failed`` result saying so, never a fake score.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Awaitable, Callable, Protocol, TypeVar, runtime_checkable

from oracle.config.model import OracleConfig
from oracle.results.result import EvaluationResult
from oracle.routing.route import Route
from oracle.tasks.task import Task, Trajectory

if TYPE_CHECKING:
    from oracle.providers.pool import ProviderPool


@dataclass(frozen=True, kw_only=True)
class EvaluationContext:
    """Everything a strategy may read; the only argument ``evaluate`` gets."""

    task: Task
    trajectories: tuple[Trajectory, ...]
    config: OracleConfig
    route: Route | None = None
    extra: dict[str, Any] = field(default_factory=dict)
    """Room for callers (e.g. a human answer applied on resume)."""
    providers: ProviderPool | None = None
    """The model clients to use (owned by the Oracle). ``None``: a strategy that needs a model opens
    a pool of its own for this one evaluation and closes it before returning."""


@runtime_checkable
class Strategy(Protocol):
    """An evaluator: name, version, a spec for the trace, and one async evaluate method."""

    @property
    def name(self) -> str:
        """The evaluator kind it registers under (a built-in kind or a plugin's name)."""
        ...

    @property
    def version(self) -> str:
        """Version of its evaluation logic (recorded in provenance)."""
        ...

    def spec(self, config: OracleConfig) -> dict[str, Any]:
        """Name, version and the settings from ``config`` this strategy runs with (differing from the
        defaults); goes into provenance. A pure function of ``config``: a strategy holds no settings."""
        ...

    async def evaluate(self, ctx: EvaluationContext) -> EvaluationResult:
        """Evaluate every candidate under ``ctx.config`` (the only configuration it reads); fill
        ``latency_ms`` and ``provenance.strategy`` / ``provenance.config_hash``; never raise on model,
        network or sandbox faults."""
        ...


StrategyFactory = Callable[[], Strategy]
_REGISTRY: dict[str, StrategyFactory] = {}


def register_strategy(kind: str) -> Callable[[StrategyFactory], StrategyFactory]:
    """Register a factory ``() -> Strategy`` under an evaluator kind (configuration comes with each
    ``EvaluationContext``, never at construction, so ``spec(config)`` is what runs)."""

    def deco(factory: StrategyFactory) -> StrategyFactory:
        _REGISTRY[kind] = factory
        return factory

    return deco


def strategy_factory(kind: str) -> StrategyFactory | None:
    """The registered factory for ``kind``: a built-in, or else a third-party evaluator from the
    ``oracle_router.evaluators`` entry points (a plugin that fails to load raises PluginError)."""
    _load_builtin_strategies()
    if kind not in _REGISTRY:
        _load_plugin_strategies()
    return _REGISTRY.get(kind)


def registered_strategies() -> list[str]:
    """Every evaluator kind: the built-ins and the installed third-party ones."""
    _load_builtin_strategies()
    _load_plugin_strategies()
    return sorted(_REGISTRY)


def _load_builtin_strategies() -> None:
    # Direct imports: renaming a built-in evaluator fails here (and in mypy), never silently.
    from oracle.strategies.decision_judge import strategy as _dj  # noqa: F401 - they register
    from oracle.strategies.llm_judge import strategy as _lj  # noqa: F401
    from oracle.strategies.verifier import strategy as _vf  # noqa: F401


def _load_plugin_strategies() -> None:
    from oracle._internal.plugins import EVALUATORS, clash, load_group
    from oracle.errors import PluginError

    for name, factory in load_group(EVALUATORS).items():
        known = _REGISTRY.get(name)
        if known is not None and known is not factory:
            raise clash(EVALUATORS, name, "evaluator")
        if not callable(factory):
            raise PluginError(f"{EVALUATORS} plugin {name!r}: {factory!r} is not a factory () -> Strategy",
                              plugin=name)
        _REGISTRY[name] = factory


_Evaluate = TypeVar("_Evaluate", bound=Callable[..., Awaitable[EvaluationResult]])


def needs_providers(evaluate: _Evaluate) -> _Evaluate:
    """Decorate a strategy's ``evaluate``: a context without ``providers`` (a strategy called
    directly, not through an Oracle) gets a pool of its own, closed when the evaluation ends."""

    @functools.wraps(evaluate)
    async def wrapper(self: Any, ctx: EvaluationContext) -> EvaluationResult:
        if ctx.providers is not None:
            return await evaluate(self, ctx)
        from oracle.providers.pool import ProviderPool

        async with ProviderPool() as pool:
            return await evaluate(self, replace(ctx, providers=pool))

    return wrapper  # type: ignore[return-value]
