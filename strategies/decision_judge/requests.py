"""Which questions the decision model is asked, and which fields it sees.

Only the fields a question names (``Question.inputs``) go into the request: a question about
politeness has no business seeing the reference answer, and a smaller state is cheaper and leaks
less. Questions that see the same fields share one call; all criteria of a candidate are one call.
A comparison question (options = the trajectory ids) carries the candidates as its options.
"""

from __future__ import annotations

import json
from typing import Any, Sequence

from oracle.providers.types import DecisionQuestion, DecisionRequest
from oracle.tasks.questions import MAX_SCORE, Question, QuestionInputs
from oracle.tasks.task import Criterion, Task, Trajectory

CRITERION_PREFIX = "The response satisfies: "
"""Each rubric criterion becomes the likelihood question '<prefix><criterion>'."""

TASK_FIELD_KEYS: dict[str, str] = {
    "prompt": "prompt", "description": "description", "context": "context", "criteria": "criteria",
    "reference": "reference", "metadata": "task_metadata",
}
"""Task field -> key in the request state."""
CANDIDATE_FIELD_KEYS: dict[str, str] = {
    "answer": "response", "code": "response_code", "steps": "response_steps",
    "output": "response_output", "metadata": "response_metadata",
}
"""Candidate field -> key in the request state (prefixed so task and candidate never collide)."""
EXPECTED_KEY = "expected_output"
CLARIFICATIONS_KEY = "clarifications"
"""A reviewer's free-text answers (``Task.clarifications``), beside the prompt whenever it is shown."""


def criterion_question_id(index: int) -> str:
    return f"criterion_{index}"


def criterion_questions(criteria: Sequence[Criterion]) -> list[Question]:
    """One likelihood question per criterion, seeing the default fields (prompt + answer)."""
    return [Question(id=criterion_question_id(i), type="likelihood",
                     instructions=CRITERION_PREFIX + c.criterion)
            for i, c in enumerate(criteria)]


def _task_value(task: Task, name: str) -> Any:
    if name == "criteria":
        return [c.criterion for c in task.criteria] or None
    if name == "metadata":
        return task.metadata or None
    return getattr(task, name)


def _candidate_value(candidate: Trajectory, name: str) -> Any:
    if name == "steps":
        return [s.model_dump(mode="json", exclude_defaults=True) for s in candidate.steps] or None
    if name == "metadata":
        return candidate.metadata or None
    return getattr(candidate, name)


def visible_state(task: Task, candidate: Trajectory | None, inputs: QuestionInputs) -> dict[str, Any]:
    """The request state: exactly the fields ``inputs`` names, absent values left out.

    An empty answer is kept (the model should see that the response is empty); a field the task or
    candidate does not have (None, empty list) is left out rather than sent as null. A reviewer's
    clarifications go wherever the prompt goes.
    """
    state: dict[str, Any] = {}
    for name in inputs.task:
        value = _task_value(task, name)
        if value is not None:
            state[TASK_FIELD_KEYS[name]] = value
    notes = task.clarifications() if "prompt" in inputs.task else []
    if notes:  # a reviewer's clarifications travel with the prompt
        state[CLARIFICATIONS_KEY] = notes
    if candidate is not None:
        for field in inputs.candidate:
            value = _candidate_value(candidate, field)
            if value is not None:
                state[CANDIDATE_FIELD_KEYS[field]] = value
    if inputs.expected and task.reference is not None:
        state[EXPECTED_KEY] = task.reference
    return state


def group_by_inputs(questions: Sequence[Question], *, default_model: str | None = None,
                    by_model: bool = True) -> list[list[Question]]:
    """Questions that see the same fields (and, on a native endpoint, ask the same model: their own
    ``model`` or ``default_model``), grouped in first-seen order: one call per group."""
    groups: dict[tuple[str, str | None], list[Question]] = {}
    for q in questions:
        model = (q.model or default_model) if by_model else None
        groups.setdefault((q.inputs.model_dump_json(), model), []).append(q)
    return list(groups.values())


def to_decision_question(question: Question) -> DecisionQuestion:
    """The wire-neutral form of a question (scores and abstention stay on our side)."""
    return DecisionQuestion(
        id=question.id, type=question.type, instructions=question.instructions,
        options=dict(question.options or {}) if question.type == "choice" else None,
        levels=list(question.levels or []) if question.type == "score" else None)


def decision_request(state: dict[str, Any] | str, questions: Sequence[Question]) -> DecisionRequest:
    return DecisionRequest(state=state, questions=[to_decision_question(q) for q in questions])


def _candidate_text(candidate: Trajectory, fields: Sequence[str]) -> str:
    """A candidate as one option description: its answer alone, or each named field labelled."""
    values = {name: _candidate_value(candidate, name) for name in fields}
    shown = {name: value for name, value in values.items() if value is not None}
    if list(shown) == ["answer"]:
        return str(shown["answer"])
    return "\n".join(f"{name}: {value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)}"
                     for name, value in shown.items())


def comparison_question(question: Question, candidates: Sequence[Trajectory]) -> Question:
    """The task's comparison question with its options in the given candidate order, each option
    described by that candidate (the fields ``question.inputs.candidate`` names), after any
    description the task gave it.

    Every option gets the top score internally: a comparison ranks by the probability of being
    best, not by per-option scores (which a comparison question may not have).
    """
    given = question.options or {}
    fields = question.inputs.candidate
    options = {c.id: "\n".join(part for part in (given.get(c.id) or "", _candidate_text(c, fields)) if part)
               for c in candidates}
    return question.model_copy(update={"options": options, "scores": {c.id: MAX_SCORE for c in candidates}})


def comparison_state(task: Task, question: Question) -> dict[str, Any]:
    """The task fields the comparison question names (the candidates travel as its options)."""
    return visible_state(task, None, question.inputs.model_copy(update={"candidate": []}))
