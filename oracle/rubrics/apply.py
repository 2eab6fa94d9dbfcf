"""Turn a task that names a rubric into the task and settings it is judged with.

Criteria, questions and the judge prompt become the task's own (validated again, so the resolved
task is exactly as if written inline); ``min_confidence`` becomes each question's default;
``pass_threshold`` and ``calibration`` become a per-task overlay on the decision and LLM judges'
config, so the result's ``config_hash`` says which thresholds were applied. A calibration file
named by a release is checked against the sha256 the release pinned: a changed file is refused.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from oracle.rubrics.errors import RubricError
from oracle.rubrics.model import RubricContent, RubricRef
from oracle.rubrics.store import RubricStore
from oracle.tasks.task import TaskInput


@dataclass(frozen=True)
class ResolvedRubric:
    item: TaskInput
    ref: RubricRef
    overlay: dict[str, dict[str, Any]] = field(default_factory=dict)
    """Config sections -> fields to override for this task (empty when the rubric sets none)."""


def _overlay(content: RubricContent) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    if content.pass_threshold is not None:
        out["decision_judge"] = {"pass_threshold": content.pass_threshold}
        out["llm_judge"] = {"pass_threshold": content.pass_threshold}
    if content.calibration is not None:
        path = Path(content.calibration.path)
        try:
            digest = hashlib.sha256(path.read_bytes()).hexdigest()
        except OSError as exc:
            raise RubricError(f"rubric calibration {path}: cannot read: {exc.strerror}") from None
        if digest != content.calibration.sha256:
            raise RubricError(f"rubric calibration {path}: sha256 {digest[:12]}... differs from the "
                              f"{content.calibration.sha256[:12]}... the rubric pinned")
        out["decision_judge"] = {"calibration_file": str(path)}
    return out


def resolve_rubric(item: TaskInput, store: RubricStore) -> ResolvedRubric:
    """The task with its rubric applied; RubricError when the rubric cannot be used as named."""
    spec = item.task.rubric
    if spec is None:
        raise ValueError("resolve_rubric: the task names no rubric")
    content, ref = store.resolve(spec)
    questions = [q.model_dump(mode="json") for q in content.questions]
    if content.min_confidence is not None:
        for q in questions:
            if q.get("min_confidence") is None:
                q["min_confidence"] = content.min_confidence
    task = item.task.model_dump(mode="json")
    task.update(rubric=None, criteria=[c.model_dump(mode="json") for c in content.criteria],
                questions=questions, judge_prompt=content.judge_prompt)
    resolved = TaskInput.model_validate({"task": task,
                                         "trajectories": [t.model_dump(mode="json") for t in item.trajectories]})
    return ResolvedRubric(item=resolved, ref=ref, overlay=_overlay(content))


def config_with(config: Any, overlay: dict[str, dict[str, Any]]) -> Any:
    """``config`` with the overlay applied (validated again; the hash changes accordingly)."""
    if not overlay:
        return config
    data = config.model_dump(mode="python")
    for section, fields in overlay.items():
        data[section] = {**data[section], **fields}
    return type(config).model_validate(data)
