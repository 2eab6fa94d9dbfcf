"""The route: the routing decision and its full trace.

Every vote, weight, gate and the signals are kept so a reader can recompute the decision by hand.
Serialized with sorted keys so two runs diff cleanly.

``Route``, ``VoteRecord`` and ``Gate`` are standard-library dataclasses that pydantic validates at
the boundaries: a route read back from JSON (a result file, the escalation store, an HTTP reply)
goes through ``Route.model_validate`` with every field checked and unknown keys refused, and a
route inside an ``OracleResult`` is validated with it. The router itself builds them directly from
values it computed with known types (mypy checks those calls): validating its own output again
cost about a fifth of a route. ``Route`` keeps the pydantic model methods callers use
(``model_validate``, ``model_dump``, ``model_dump_json``, ``model_copy``, ``model_json_schema``).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from functools import cache
from typing import Any, ClassVar, Literal, NamedTuple

from pydantic import (BaseModel, ConfigDict, SerializerFunctionWrapHandler, TypeAdapter, model_serializer,
                      model_validator)

from oracle.tasks.task import EvaluatorKind

SCHEMA_VERSION = "2"
"""2: votes name the signals they read (``reads``) instead of copying their values, and carry their
changed ``settings`` instead of a ``spec`` repeating name, version and weight. Schema-1 traces load."""
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
    """One policy's opinion: confidence spread over the evaluators (sums to 1), and why.

    An immutable named tuple, not a pydantic model or a frozen dataclass: policies build one per
    vote on the hot path (a tuple is built in one step; a frozen dataclass sets each field through
    ``object.__setattr__``), and the router copies it into the trace's ``VoteRecord``.
    """

    scores: dict[str, float]
    reason: str
    reads: tuple[str, ...] = ()
    """Names of the signals the policy read."""


# Not kw_only: the router builds one per vote, positionally (faster), so the field order matters.
@dataclass(slots=True)
class VoteRecord:
    """A vote as it entered the totals: which policy, its weight, its spread and reason."""

    __pydantic_config__: ClassVar[ConfigDict] = _FORBID

    policy: str
    weight: float
    scores: dict[str, float]
    reason: str
    version: str = ""
    """The policy's version (its vote logic); "" in traces written before versions were recorded."""
    reads: tuple[str, ...] = ()
    """Names of the signals this policy read; their values are in the route's ``signals`` (see
    ``Route.signals_read``), recorded once for the whole route."""
    settings: dict[str, Any] = field(default_factory=dict)
    """The policy's settings that differ from their defaults (empty when none do)."""

    @model_validator(mode="before")
    @classmethod
    def _from_schema_1(cls, data: Any) -> Any:
        """A vote of a schema-1 trace: each vote carried a copy of the values it read (``signals``)
        and a ``spec`` (name, version, weight, changed settings); read them as ``reads`` and
        ``settings``, so stored results and escalations from before still load."""
        if isinstance(data, dict):
            # Only the schema-1 shapes are read; anything else stays, and is refused as an unknown key.
            if isinstance(data.get("signals"), dict) and "reads" not in data:
                data = {**data, "reads": tuple(data["signals"])}
                del data["signals"]
            if isinstance(data.get("spec"), dict) and "settings" not in data:
                data = {**data, "settings": data["spec"].get("settings", {})}
                del data["spec"]
        return data


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

    def signals_read(self, vote: VoteRecord) -> dict[str, Any]:
        """The values of the signals ``vote`` read, from this route's ``signals``."""
        return {name: self.signals[name] for name in vote.reads}

    def to_json(self) -> str:
        from oracle._internal.canonical import canonical_json

        return canonical_json(self.model_dump(mode="json"))

    # The pydantic model methods callers use, through one TypeAdapter.
    @classmethod
    def model_validate(cls, obj: Any, *, strict: bool | None = None) -> "Route":
        """A route from plain data (or a Route), every field checked, unknown keys refused."""
        return _adapter().validate_python(obj, strict=strict)

    @classmethod
    def model_validate_json(cls, data: str | bytes) -> "Route":
        return _adapter().validate_json(data)

    @classmethod
    def model_json_schema(cls, **kwargs: Any) -> dict[str, Any]:
        return _adapter().json_schema(**kwargs)

    def model_dump(self, *, mode: Literal["json", "python"] = "python", **kwargs: Any) -> dict[str, Any]:
        return _adapter().dump_python(self, mode=mode, **kwargs)  # type: ignore[no-any-return]

    def model_dump_json(self, **kwargs: Any) -> str:
        return _adapter().dump_json(self, **kwargs).decode()

    def model_copy(self, *, update: dict[str, Any] | None = None) -> "Route":
        """A shallow copy with ``update`` applied (checked: an unknown field is a TypeError)."""
        return dataclasses.replace(self, **(update or {}))


@cache
def _adapter() -> TypeAdapter[Route]:
    """Built on the first validation or dump of a route, not at import (routing itself needs none)."""
    return TypeAdapter(Route)
