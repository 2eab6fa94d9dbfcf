"""The strategy protocol and the registry of evaluators.

A strategy has one async method, ``evaluate(ctx) -> EvaluationResult``. ``EvaluationContext`` is a
frozen keyword-only object, so fields can be added later without breaking any strategy. Strategies
register by kind with ``@register_strategy``; only evaluators that really work are registered, and
an unregistered kind yields a ``failed`` result saying so, never a fake score.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Protocol, runtime_checkable

from oracle.config import OracleConfig
from oracle.result import EvaluationResult
from oracle.route import Route
from oracle.task import EvaluatorKind, Task, Trajectory


@dataclass(frozen=True, kw_only=True)
class EvaluationContext:
    """Everything a strategy may read; the only argument ``evaluate`` gets."""

    task: Task
    trajectories: tuple[Trajectory, ...]
    config: OracleConfig
    route: Route | None = None
    extra: dict[str, Any] = field(default_factory=dict)
    """Room for callers (e.g. a human answer applied on resume)."""


@runtime_checkable
class Strategy(Protocol):
    """An evaluator: name, version, a spec for the trace, and one async evaluate method."""

    name: EvaluatorKind
    version: str

    def spec(self) -> dict[str, Any]:
        """Name plus the settings that differ from the defaults (goes into provenance)."""
        ...

    async def evaluate(self, ctx: EvaluationContext) -> EvaluationResult:
        """Evaluate every candidate; never raise on model, network or sandbox faults."""
        ...


StrategyFactory = Callable[[OracleConfig], Strategy]
_REGISTRY: dict[str, StrategyFactory] = {}


def register_strategy(kind: EvaluatorKind) -> Callable[[StrategyFactory], StrategyFactory]:
    """Register a factory ``config -> Strategy`` under an evaluator kind."""

    def deco(factory: StrategyFactory) -> StrategyFactory:
        _REGISTRY[kind] = factory
        return factory

    return deco


def strategy_factory(kind: str) -> StrategyFactory | None:
    """The registered factory for ``kind``, importing the built-in strategies on first use."""
    if kind not in _REGISTRY:
        _load_builtin_strategies()
    return _REGISTRY.get(kind)


def registered_strategies() -> list[str]:
    _load_builtin_strategies()
    return sorted(_REGISTRY)


def _load_builtin_strategies() -> None:
    import importlib

    for module in ("oracle.strategies.verifier", "oracle.strategies.decision_judge", "oracle.strategies.llm_judge"):
        try:
            importlib.import_module(module)
        except ModuleNotFoundError as exc:
            # Only a missing strategy module is tolerated (not built yet); a missing dependency
            # inside an existing module is a real error and propagates.
            if exc.name != module:
                raise
