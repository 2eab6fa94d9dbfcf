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


class RubricEvidenceTooSmall(RubricError):
    """The evidence answered no item, or fewer than ``rubrics.min_evidence_items`` (CLI exit 3):
    agreement over a handful of items (or none, when every run failed) justifies nothing, so
    ``--force`` does not pass it; lower the setting to release on a small set knowingly."""

    def __init__(self, path: str, answered: int | None, minimum: int) -> None:
        self.answered, self.minimum = answered, minimum
        if answered is None:
            what = "records no count of answered items (an older summary: run the comparison or calibration again)"
        elif answered == 0:
            what = "has no answered item (every run failed, abstained or went unparsed)"
        else:
            what = f"has {answered} answered item(s), fewer than rubrics.min_evidence_items ({minimum})"
        super().__init__(f"release refused: evidence {path} {what}")
