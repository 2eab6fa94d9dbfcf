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
from oracle.tasks.questions import is_comparison, scoring_problem
from oracle.tasks.task import Task, Trajectory
from oracle.strategies.decision_judge.readout import MAX_READOUT_LABELS

Mode = Literal["questions", "criteria", "comparison", "claim_check"]


def revalidate_task(task: Task) -> Task:
    """Run the task's full validation again; failures raise ``TaskValidationError`` naming the field."""
    with warnings.catch_warnings():
        # model_construct'ed objects may hold raw dicts; dumping them warns, validating them is the point.
        warnings.simplefilter("ignore")
        data = task.model_dump(mode="python")
    return Task.model_validate(data)


def decision_mode(task: Task, candidates: Sequence[Trajectory]) -> Mode:
    """claim_check when the task asks for one; comparison when its question's options are the
    trajectory ids; else questions when it has typed questions; else criteria.

    Several candidates with criteria are judged one by one on the criteria (pass rule and weights
    intact); comparing them is something a task asks for explicitly, never a fallback.
    """
    ids = [c.id for c in candidates]
    if task.claim_check:
        return "claim_check"
    if any(is_comparison(q, ids) for q in task.questions):
        return "comparison"
    if task.questions:
        return "questions"
    if task.criteria:
        return "criteria"
    raise TaskValidationError(
        "task.questions: the decision judge needs typed questions, rubric criteria, a comparison "
        "question (a choice whose options are the trajectory ids) or claim_check", field="task.questions")


def _check_claim(task: Task, candidates: Sequence[Trajectory]) -> None:
    if len(candidates) != 1:
        raise TaskValidationError(f"trajectories: a claim check judges one claim; got {len(candidates)} "
                                  "candidates", field="trajectories")
    if not (task.context or task.reference):
        raise TaskValidationError("task.claim_check: a claim check needs the evidence as text: "
                                  "task.context or task.reference", field="task.claim_check")
    for name in ("questions", "criteria"):
        if getattr(task, name):
            raise TaskValidationError(
                f"task.{name}: a claim check asks its own two questions; the task's {name} would not be "
                "asked (drop claim_check, or move them to a separate task)", field=f"task.{name}")


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
    if mode == "claim_check":
        _check_claim(task, candidates)
    ids = [c.id for c in candidates]
    for i, q in enumerate(task.questions):
        where = f"task.questions[{i}]"
        problem = scoring_problem(q, ids)
        if problem is not None:
            raise TaskValidationError(f"{where}.{problem[0]}: {problem[1]}", field=f"{where}.{problem[0]}")
        if mode == "comparison" and not is_comparison(q, ids):
            raise TaskValidationError(
                f"{where}: a comparison question (options = the trajectory ids) is asked about all candidates "
                f"at once; question {q.id!r} is about each candidate: put it in a separate task",
                field=where)
        if q.inputs.expected and task.reference is None:
            raise TaskValidationError(
                f"{where}.inputs.expected: the question asks for the expected output but the "
                "task has no reference", field=f"{where}.inputs.expected")
        if label_limited and len(q.labels()) > MAX_READOUT_LABELS:
            raise TaskValidationError(
                f"{where}.options: {len(q.labels())} options; logprob readout and sampling "
                f"read single-token labels and support at most {MAX_READOUT_LABELS} "
                "(use a native decision endpoint)", field=f"{where}.options")
    return task, mode
