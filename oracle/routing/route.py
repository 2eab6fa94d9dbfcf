"""The route: the routing decision and its full trace.

Every vote, weight, gate and the signals are kept so a reader can recompute the decision by hand.

``Route``, ``VoteRecord`` and ``Gate`` are standard-library dataclasses. The router builds them
from values it computed with known types (mypy checks those calls), and pydantic validates them at
the boundaries, through ``route_adapter()``: a route read back from JSON (a result file, the
escalation store, an HTTP reply) has every field checked and unknown keys refused, and so has a
route inside an ``OracleResult``. Validating the router's own output again would make routing
about 1.5 times slower.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cache
from typing import Any, ClassVar, NamedTuple

from pydantic import BaseModel, ConfigDict, SerializerFunctionWrapHandler, TypeAdapter, model_serializer

from oracle.tasks.task import EvaluatorKind

SCHEMA_VERSION = "2"
"""2: votes name the signals they read (``reads``) and carry their changed ``settings``."""
_FORBID = ConfigDict(extra="forbid")


class HistoryRef(BaseModel):
    """Which snapshot of the routing history (prior hardness learned from finished evaluations) a
    route read."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    hash: str
    """sha256 of the snapshot's content (per task content hash: evaluations, hard ones)."""
    through_seq: int
    """The snapshot holds the store's outcomes up to this ``seq``; ``HistoryLearning(store,
    through_seq=...)`` rebuilds it."""
    tasks: int
    evaluations: int


class Vote(NamedTuple):
    """One policy's opinion: confidence spread over the evaluators (sums to 1), and why (immutable)."""

    scores: dict[str, float]
    reason: str
    reads: tuple[str, ...] = ()
    """Names of the signals the policy read."""


@dataclass(slots=True, kw_only=True)
class VoteRecord:
    """A vote as it entered the totals: which policy, its weight, its spread and reason."""

    __pydantic_config__: ClassVar[ConfigDict] = _FORBID

    policy: str
    weight: float
    scores: dict[str, float]
    reason: str
    version: str = ""
    """The policy's version (its vote logic)."""
    reads: tuple[str, ...] = ()
    """Names of the signals this policy read; their values are in the route's ``signals``,
    recorded once for the whole route."""
    settings: dict[str, Any] = field(default_factory=dict)
    """The policy's settings that differ from their defaults (empty when none do)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Gate:
    """A feasibility gate: whether an evaluator can run on this task, and why not (immutable)."""

    __pydantic_config__: ClassVar[ConfigDict] = _FORBID

    evaluator: str
    feasible: bool
    reason: str


@dataclass(slots=True, kw_only=True)
class Route:
    """Which evaluator runs, how confident the router is, and the full trace behind it."""

    __pydantic_config__: ClassVar[ConfigDict] = _FORBID

    evaluator: EvaluatorKind | None
    """The evaluator that runs; None when no evaluator is feasible."""
    confidence: float
    """Winner's share of the weighted totals over feasible evaluators (0..1); 0 when none."""
    totals: dict[str, float]
    """Weighted vote totals per evaluator, before gating."""
    votes: list[VoteRecord]
    abstained: list[str] = field(default_factory=list)
    """Policies that abstained."""
    policies: dict[str, str] = field(default_factory=dict)
    """Every policy in the chain (voting or abstaining) -> its version."""
    gates: list[Gate]
    runner_up: str | None = None
    margin: float | None = None
    """Winner's normalized confidence minus the runner-up's."""
    threshold: float
    low_confidence: bool = False
    fallback: str | None = None
    """None, or why the configured default evaluator was used instead of the vote winner."""
    override: bool = False
    """True when the task's ``evaluator`` field forced the choice."""
    claim_check: bool = False
    """The decision judge runs its claim check (confirmation versus challenge) on the one candidate:
    the route goes to it and ``signals.claim_checkable`` holds (``claim_check: true``, or the prompt
    asks to verify a claim, with a reference or context as evidence)."""
    hard: bool = False
    """The task counts as hard (``routing.policies.difficulty``: prior hardness at ``hard_history``,
    or a stated ``hard`` when ``stated_hard``): the evaluator spends its repeats (more samples, both
    orders) rather than a cheaper path."""
    signals: dict[str, Any]
    config_hash: str
    schema_version: str = SCHEMA_VERSION
    elapsed_us: float = 0.0
    history_snapshot: HistoryRef | None = None
    """The frozen routing-history snapshot prior hardness was read from (oracle.routing._history), when the
    Oracle learns from history; left out of the JSON otherwise, so other traces stay as they were."""

    @model_serializer(mode="wrap")
    def _without_unused_history(self, handler: SerializerFunctionWrapHandler) -> Any:
        data = handler(self)
        if isinstance(data, dict) and data.get("history_snapshot", 0) is None:
            del data["history_snapshot"]
        return data


@cache
def route_adapter() -> TypeAdapter[Route]:
    """pydantic's view of ``Route``, for the boundaries: ``validate_python`` / ``validate_json`` for
    a route from outside (every field checked, unknown keys refused), ``dump_python`` /
    ``dump_json`` to write one, ``json_schema``. Built on first use, not at import: routing itself
    needs none."""
    return TypeAdapter(Route)
