"""Rubric errors: each says what to do next, and the CLI maps them to exit codes."""

from __future__ import annotations

from typing import TYPE_CHECKING

from oracle.errors import OracleError

if TYPE_CHECKING:
    from oracle.rubrics.gates import GateResult


class RubricError(OracleError, ValueError):
    """A rubric, draft or evidence that cannot be used as asked (CLI exit 2)."""


class RubricTampered(RubricError):
    """A released file changed after release, or the index no longer matches the files."""


class RubricGateFailed(RubricError):
    """The evidence fails a release gate (CLI exit 3); ``--force`` releases anyway, recorded."""

    def __init__(self, failing: "list[GateResult]") -> None:
        self.failing = failing
        parts = [f"{g.metric} {'missing' if g.actual is None else f'= {g.actual:.4g}'} (gate: {g.metric} {g.op} "
                 f"{g.required:g})"
                 for g in failing]
        super().__init__("release refused by gate: " + "; ".join(parts))
