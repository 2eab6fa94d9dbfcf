"""Shared shape of a policy: a frozen dataclass with a name, a weight and a spec."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from oracle.policy import spread
from oracle.route import Vote


@dataclass(frozen=True)
class BasePolicy:
    """Subclasses set ``name`` and ``reads`` and implement ``vote``."""

    weight: float = 1.0
    name: ClassVar[str] = "base"
    reads: ClassVar[tuple[str, ...]] = ()

    def spec(self) -> dict[str, Any]:
        return {"name": self.name, "weight": self.weight}

    def _vote(self, reason: str, *, verifier: float = 0.0, decision_judge: float = 0.0,
              llm_judge: float = 0.0) -> Vote:
        return Vote(scores=spread(verifier, decision_judge, llm_judge), reason=reason, reads=self.reads)
