"""Tasks that name a rubric, applied once before a comparison runs.

Every arm (and the router) must judge the task the rubric defines, so the rubric is resolved up
front: its criteria, questions and judge prompt become the item's task, and its thresholds a
per-item config overlay the evaluator arms run with. The content hash each named rubric resolved
to goes into summary.json (``rubric_hashes``): a release's evidence must name its draft's hash.
A rubric that cannot be used is bad input, before any call.
"""

from __future__ import annotations

from typing import Any, Sequence

from oracle.comparison._labels import LabelledItem, check_label
from oracle.config.model import OracleConfig
from oracle.errors import TaskValidationError


def apply_rubrics(items: Sequence[LabelledItem], config: OracleConfig
                  ) -> tuple[list[LabelledItem], dict[str, dict[str, dict[str, Any]]], dict[str, str]]:
    """(items with rubrics applied, item id -> config overlay, rubric spec -> content hash)."""
    if not any(i.task.rubric for i in items):
        return list(items), {}, {}
    from oracle.rubrics.apply import resolve_rubric
    from oracle.rubrics.errors import RubricError
    from oracle.rubrics.store import RubricStore

    store = RubricStore(config.rubrics.dir)
    out: list[LabelledItem] = []
    overlays: dict[str, dict[str, dict[str, Any]]] = {}
    hashes: dict[str, str] = {}
    for item in items:
        spec = item.task.rubric
        if spec is None:
            out.append(item)
            continue
        try:
            resolved = resolve_rubric(item.task_input(), store)
        except RubricError as exc:
            raise TaskValidationError(f"{item.id}: task.rubric: {exc}", field="task.rubric") from None
        check_label(item.label, resolved.item)
        hashes[spec] = resolved.ref.content_hash
        if resolved.overlay:
            overlays[item.id] = resolved.overlay
        out.append(LabelledItem(task=resolved.item.task, trajectories=list(resolved.item.trajectories),
                                label=item.label))
    return out, overlays, hashes
