"""Reject bad decision-judge input before any model call, naming the field.

``Task`` and ``Question`` already validate when they are built. This runs again inside the judge
because objects can reach it unvalidated (``model_construct``, a mutated dict) and because some
rules depend on the judge's situation: the mode, the backend's label limit, a missing reference.
A rejection here means no request is ever sent.
"""

from __future__ import annotations

import warnings
from collections import Counter
from typing import Literal, Sequence

from oracle.errors import TaskValidationError
from oracle.questions import MAX_CHOICE_OPTIONS
from oracle.task import Task, Trajectory
from oracle.strategies.decision.readout import MAX_READOUT_LABELS

Mode = Literal["questions", "criteria", "comparison"]


def revalidate_task(task: Task) -> Task:
    """Run the task's full validation again; failures raise ``TaskValidationError`` naming the field."""
    with warnings.catch_warnings():
        # model_construct'ed objects may hold raw dicts; dumping them warns, validating them is the point.
        warnings.simplefilter("ignore")
        data = task.model_dump(mode="python")
    return Task.model_validate(data)


def decision_mode(task: Task, candidates: Sequence[Trajectory]) -> Mode:
    """questions when the task has typed questions; else comparison for several candidates; else criteria."""
    if task.questions:
        return "questions"
    if len(candidates) > 1:
        return "comparison"
    if task.criteria:
        return "criteria"
    raise TaskValidationError(
        "task.questions: the decision judge needs typed questions, rubric criteria, "
        "or several candidates to compare", field="task.questions")


def validate_for_decision(task: Task, candidates: Sequence[Trajectory], *,
                          label_limited: bool) -> tuple[Task, Mode]:
    """Everything checked before the first call; returns the revalidated task and the mode.

    ``label_limited``: the backend reads answers from single-token labels (logprob readout or
    sampling), which caps the number of options at ``MAX_READOUT_LABELS``.
    """
    task = revalidate_task(task)
    if not candidates:
        raise TaskValidationError("trajectories: at least one candidate is needed", field="trajectories")
    dupes = sorted(i for i, n in Counter(c.id for c in candidates).items() if n > 1)
    if dupes:
        raise TaskValidationError(f"trajectories: duplicate trajectory ids {dupes}", field="trajectories")
    if task.criteria and all(c.weight == 0 for c in task.criteria):
        raise TaskValidationError("task.criteria: at least one criterion weight must be above 0",
                                  field="task.criteria")
    mode = decision_mode(task, candidates)
    if mode == "questions":
        for i, q in enumerate(task.questions):
            where = f"task.questions.{i}"
            if q.inputs.expected and task.reference is None:
                raise TaskValidationError(
                    f"{where}.inputs.expected: the question asks for the expected output but the "
                    "task has no reference", field=f"{where}.inputs.expected")
            if label_limited and len(q.labels()) > MAX_READOUT_LABELS:
                raise TaskValidationError(
                    f"{where}.options: {len(q.labels())} options; logprob readout and sampling "
                    f"read single-token labels and support at most {MAX_READOUT_LABELS} "
                    "(use a native decision endpoint)", field=f"{where}.options")
    if mode == "comparison":
        limit = MAX_READOUT_LABELS if label_limited else MAX_CHOICE_OPTIONS
        if len(candidates) > limit:
            raise TaskValidationError(
                f"trajectories: {len(candidates)} candidates; at most {limit} can be compared "
                "in one decision question", field="trajectories")
    return task, mode
