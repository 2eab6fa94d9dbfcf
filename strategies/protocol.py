"""The evaluator protocol and the context an evaluator gets.

An evaluator has one async method, ``evaluate(ctx) -> EvaluationResult``. ``EvaluationContext`` is
a frozen keyword-only object, so fields can be added later without breaking any evaluator. This
module holds no registry: the Oracle assembles the built-ins, evaluators registered in code and
entry-point plugins itself (``oracle.register_evaluator``), so defining an evaluator has no side
effect and no evaluator imports the layer that runs it.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Awaitable, Callable, Protocol, TypeVar, runtime_checkable

from oracle._internal.moved import renamed
from oracle.config.model import OracleConfig
from oracle.results.result import EvaluationResult
from oracle.routing.route import Route
from oracle.tasks.task import Task, Trajectory

if TYPE_CHECKING:
    from oracle.providers.pool import ProviderPool


@dataclass(frozen=True, kw_only=True)
class EvaluationContext:
    """Everything an evaluator may read; the only argument ``evaluate`` gets."""

    task: Task
    trajectories: tuple[Trajectory, ...]
    config: OracleConfig
    route: Route | None = None
    extra: dict[str, Any] = field(default_factory=dict)
    """Room for callers (e.g. a human answer applied on resume)."""
    providers: ProviderPool | None = None
    """The model clients to use (owned by the Oracle). ``None``: an evaluator that needs a model
    opens a pool of its own for this one evaluation and closes it before returning."""


@runtime_checkable
class Evaluator(Protocol):
    """An evaluator: name, version, a spec for the trace, and one async evaluate method."""

    @property
    def name(self) -> str:
        """The name it runs under (a built-in kind or a plugin's name)."""
        ...

    @property
    def version(self) -> str:
        """Version of its evaluation logic (recorded in provenance)."""
        ...

    def spec(self, config: OracleConfig) -> dict[str, Any]:
        """Name, version and the settings from ``config`` this evaluator runs with (differing from
        the defaults); goes into provenance. A pure function of ``config``: an evaluator holds no
        settings."""
        ...

    async def evaluate(self, ctx: EvaluationContext) -> EvaluationResult:
        """Evaluate every candidate under ``ctx.config`` (the only configuration it reads); fill
        ``latency_ms`` and ``provenance.evaluator`` / ``provenance.config_hash``; never raise on
        model, network or sandbox faults."""
        ...


_Evaluate = TypeVar("_Evaluate", bound=Callable[..., Awaitable[EvaluationResult]])


def needs_providers(evaluate: _Evaluate) -> _Evaluate:
    """Decorate an evaluator's ``evaluate``: a context without ``providers`` (an evaluator called
    directly, not through an Oracle) gets a pool of its own, closed when the evaluation ends."""

    @functools.wraps(evaluate)
    async def wrapper(self: Any, ctx: EvaluationContext) -> EvaluationResult:
        if ctx.providers is not None:
            return await evaluate(self, ctx)
        from oracle.providers.pool import ProviderPool

        async with ProviderPool() as pool:
            return await evaluate(self, replace(ctx, providers=pool))

    return wrapper  # type: ignore[return-value]


if TYPE_CHECKING:
    Strategy = Evaluator
    """Deprecated name of ``Evaluator``."""


def __getattr__(name: str) -> Any:
    if name == "Strategy":  # the protocol's name before the evaluators had one word
        renamed(f"{__name__}.Strategy", f"{__name__}.Evaluator")
        return Evaluator
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
