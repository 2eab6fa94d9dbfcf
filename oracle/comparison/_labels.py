"""Labelled items: our task format plus a ``label``, loaded and checked before anything runs.

A labelled file is JSONL, one ``{"task": ..., "trajectories": [...], "label": {...}}`` per line.
The label holds at least one of:

- ``passed``: ``{trajectory_id: true|false}``, whether each candidate is correct;
- ``best``: ``[trajectory_id, ...]``, the preferred candidate(s);
- ``answers``: ``{question_id: option_label}``, the correct option of a question (one candidate);
- ``evaluator``: the evaluator that fits the task (scores the router).

Why everything is checked up front: a comparison spends model calls and sandbox runs on every
item; a typo on line 900 must stop the run before the first call, naming the line and the field,
not after an hour. Unknown keys, ids that name no trajectory or question, an option the question
does not have and an empty label are all bad input (``TaskValidationError``, exit 2 on the CLI).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Iterable

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from oracle.tasks._validation_errors import format_validation_error
from oracle.errors import TaskValidationError
from oracle.tasks.task import EvaluatorKind, Task, TaskInput, Trajectory

LABEL_KINDS = ("passed", "best", "answers")
"""Label kinds that score an arm's verdicts (``evaluator`` scores the route only)."""


class Label(BaseModel):
    """What is known to be right about one item."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    passed: dict[str, bool] | None = None
    """Trajectory id -> whether that candidate is correct (not every candidate need be named)."""
    best: list[str] | None = Field(default=None, min_length=1)
    """The preferred candidate(s): an arm agrees when its top-1 candidate is among them."""
    answers: dict[str, str] | None = None
    """Question id -> the correct option label (one-candidate tasks)."""
    evaluator: EvaluatorKind | None = None
    """The evaluator that fits the task: routing accuracy is measured against it."""

    def kinds(self) -> list[str]:
        """The label kinds present, in the fixed order of ``LABEL_KINDS``."""
        return [k for k in LABEL_KINDS if getattr(self, k)]


class LabelledItem(BaseModel):
    """One task, its candidates and its label; ``id`` is the task id (unique in a file)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    task: Task
    trajectories: list[Trajectory]
    label: Label

    @property
    def id(self) -> str:
        return self.task.id

    def task_input(self) -> TaskInput:
        return TaskInput(task=self.task, trajectories=self.trajectories)


def _fail(message: str, field: str, line: int | None, source: str | None) -> TaskValidationError:
    return TaskValidationError(message, field=field, line=line, source=source)


def check_label(label: Label, item: TaskInput, *, line: int | None = None,
                source: str | None = None) -> None:
    """The label's ids must name this item's trajectories, questions and options."""
    ids = [t.id for t in item.trajectories]
    if not (label.passed or label.best or label.answers or label.evaluator):
        raise _fail("label: names none of passed, best, answers, evaluator", "label", line, source)
    for key in sorted(label.passed or {}):
        if key not in ids:
            raise _fail(f"label.passed.{key}: no trajectory has this id (ids: {ids[:10]})",
                        f"label.passed.{key}", line, source)
    for i, key in enumerate(label.best or []):
        if key not in ids:
            raise _fail(f"label.best[{i}]: {key!r} names no trajectory (ids: {ids[:10]})",
                        f"label.best[{i}]", line, source)
    if label.answers and item.task.rubric is not None:
        return  # the questions come from the rubric: checked again once it is applied (acompare)
    if label.answers:
        if len(ids) != 1:
            raise _fail(f"label.answers: answers label one-candidate tasks; this one has {len(ids)} "
                        "candidates (use best or passed)", "label.answers", line, source)
        questions = {q.id: q for q in item.task.questions}
        for qid, option in sorted(label.answers.items()):
            field = f"label.answers.{qid}"
            if qid not in questions:
                raise _fail(f"{field}: the task has no question with this id (questions: "
                            f"{sorted(questions)[:10]})", field, line, source)
            labels = questions[qid].labels()
            if option not in labels:
                raise _fail(f"{field}: {option!r} is not an option of the question ({labels[:10]})",
                            field, line, source)


def parse_item(data: Any, *, line: int | None = None, source: str | None = None) -> LabelledItem:
    """One labelled item from decoded JSON; ``TaskValidationError`` naming line and field."""
    if not isinstance(data, dict):
        raise _fail(f"(root): expected an object with task, trajectories and label, got "
                    f"{type(data).__name__}", "(root)", line, source)
    unknown = sorted(set(data) - {"task", "trajectories", "label"})
    if unknown:
        raise _fail(f"{unknown[0]}: unknown key (a labelled item holds task, trajectories, label)",
                    unknown[0], line, source)
    if "label" not in data:
        raise _fail("label: missing (a labelled item needs a label)", "label", line, source)
    try:
        item = TaskInput.model_validate({k: v for k, v in data.items() if k != "label"})
    except TaskValidationError as exc:
        raise _fail(str(exc), exc.field or "task", line, source) from None
    try:
        label = Label.model_validate(data["label"])
    except ValidationError as exc:
        err = format_validation_error(exc, prefix=("label",))
        raise _fail(str(err), err.field or "label", line, source) from None
    check_label(label, item, line=line, source=source)
    return LabelledItem(task=item.task, trajectories=list(item.trajectories), label=label)


def parse_lines(lines: Iterable[str | bytes], *, source: str | None = None) -> list[LabelledItem]:
    """Every non-blank line parsed and checked; the first bad one raises naming its line."""
    items: list[LabelledItem] = []
    seen: dict[str, int] = {}
    for number, raw in enumerate(lines, 1):
        if not raw.strip():
            continue
        try:
            data = json.loads(raw)
        except ValueError as exc:
            raise _fail(f"(root): not valid JSON: {exc}", "(root)", number, source) from None
        item = parse_item(data, line=number, source=source)
        if item.id in seen:
            raise _fail(f"task.id: {item.id!r} repeats line {seen[item.id]} (item ids key the runs)",
                        "task.id", number, source)
        seen[item.id] = number
        items.append(item)
    if not items:
        raise _fail("(root): no labelled items in the file", "(root)", None, source)
    return items


def load_labelled(path: str | Path) -> list[LabelledItem]:
    """Read and check a labelled JSONL file; nothing runs if any line is bad."""
    path = Path(path)
    if not path.exists():
        raise _fail(f"labelled file not found: {path}", "LABELLED", None, None)
    if path.is_dir():
        raise _fail(f"is a directory, not a labelled file: {path}", "LABELLED", None, None)
    with path.open("rb") as fh:
        return parse_lines(fh, source=str(path))


def dump_item(item: LabelledItem) -> dict[str, Any]:
    """The JSON form of an item (defaults left out, so a converted file stays readable)."""
    return {"task": item.task.model_dump(mode="json", exclude_defaults=True),
            "trajectories": [t.model_dump(mode="json", exclude_defaults=True) for t in item.trajectories],
            "label": item.label.model_dump(mode="json", exclude_none=True)}
