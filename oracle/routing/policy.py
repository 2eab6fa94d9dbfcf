"""The policy protocol: a pure, synchronous vote on which evaluator fits a task.

A policy reads ``Signals`` and returns a ``Vote`` (confidence spread over the three evaluators,
with a reason) or ``None`` to abstain. No clock, network or randomness: the same signals give the
same vote, so the same input and config give the same route byte for byte.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from oracle.routing.route import Vote

if TYPE_CHECKING:
    from oracle.routing.signals import Signals


@runtime_checkable
class Policy(Protocol):
    """A routing policy: ``vote(signals)`` returns a ``Vote`` (a confidence spread over the evaluators
    that sums to 1, and why) or ``None`` to abstain; pure, so the same signals give the same vote.
    ``spec()`` names it, its version and its non-default settings for the trace. ``BasePolicy``
    implements everything but ``vote``."""

    @property
    def name(self) -> str:
        """The name configs use for it (``routing.policies``)."""
        ...

    @property
    def version(self) -> str:
        """Version of its vote logic (recorded in the trace; golden votes are pinned per version)."""
        ...

    @property
    def weight(self) -> float:
        """Its weight in the chain (from its settings)."""
        ...

    def vote(self, signals: "Signals") -> Vote | None:
        ...

    def spec(self) -> dict[str, Any]:
        ...

