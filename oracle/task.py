"""The task and trajectory models: the input contract of oracle-router.

A task file is ``{"task": {...}, "trajectories": [...]}``. Models use ``extra='forbid'`` so a
misspelt key fails at load time with the field named. An OpenAI-style message list is accepted as
a trajectory and converted into answer + steps.
"""

from __future__ import annotations

import json
from functools import cached_property
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from oracle._frozen import FrozenWithCache
from oracle.questions import Question
from oracle.testspec import ReferenceCheck, TestCase

EvaluatorKind = Literal["decision_judge", "llm_judge", "verifier"]
EVALUATORS: tuple[EvaluatorKind, ...] = ("decision_judge", "llm_judge", "verifier")


class Criterion(BaseModel):
    """One rubric criterion; a bare string in a task file means weight 1."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    criterion: str = Field(min_length=1)
    weight: float = Field(default=1.0, ge=0)
    """Relative weight in the score; 0 keeps it in the pass rule and out of the score."""


class Step(BaseModel):
    """One step of an agent trajectory: reasoning, a tool call, a tool result or a message."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    type: Literal["reasoning", "tool_call", "tool_result", "message"] = "message"
    content: str = ""
    role: str | None = None
    tool: str | None = None
    """Tool name for tool calls and results."""
    arguments: Any = None


class Task(FrozenWithCache):
    """What is being evaluated, plus everything an evaluator may check it against."""

    _cached = ("_content_hash",)

    model_config = ConfigDict(extra="forbid", frozen=True)

    id: str = Field(min_length=1)
    prompt: str
    description: str | None = None
    criteria: list[Criterion] = Field(default_factory=list)
    reference: str | None = None
    reference_check: ReferenceCheck | None = None
    """How the verifier compares a non-code answer with ``reference`` (default: normalized)."""
    tests: list[TestCase] = Field(default_factory=list)
    questions: list[Question] = Field(default_factory=list)
    difficulty: Literal["easy", "medium", "hard"] | None = None
    language: str | None = None
    """Programming language of candidate code (python, javascript); None means infer."""
    entry_point: str | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)
    evaluator: EvaluatorKind | None = None
    """Explicit override: this evaluator runs, and the trace records that it was forced."""
    execution: Literal["isolated", "in_process"] = "isolated"
    """How the verifier runs tests: ``isolated`` (the test in its own process, the candidate reached
    through a channel of plain data) or ``in_process`` (the test inside the candidate's process, for
    tests that need in-process access; a candidate can forge that verdict, so it also needs
    ``verifier.allow_in_process`` and its results carry ``integrity: in_process``)."""

    @field_validator("criteria", mode="before")
    @classmethod
    def _criteria_from_strings(cls, value: Any) -> Any:
        if isinstance(value, list):
            return [{"criterion": c} if isinstance(c, str) else c for c in value]
        return value

    @model_validator(mode="after")
    def _check_consistency(self) -> "Task":
        if self.criteria and all(c.weight == 0 for c in self.criteria):
            raise ValueError("criteria: at least one criterion weight must be above 0")
        ids = [q.id for q in self.questions]
        dupes = sorted({i for i in ids if ids.count(i) > 1})
        if dupes:
            raise ValueError(f"questions: duplicate question ids {dupes}")
        return self

    def content_hash(self) -> str:
        """A stable hash of the task's content (keys resumable batch rows and escalation ids)."""
        return self._content_hash

    @cached_property
    def _content_hash(self) -> str:
        from oracle._canonical import sha256_json

        return sha256_json(self.model_dump(mode="json"))


class Trajectory(BaseModel):
    """One candidate: its final answer, optional code, steps and execution output."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    id: str = Field(min_length=1)
    answer: str = ""
    code: str | None = None
    steps: list[Step] = Field(default_factory=list)
    output: str | None = None
    """Execution output the candidate produced (logs, test runs), if any."""
    metadata: dict[str, Any] = Field(default_factory=dict)


def trajectory_from_messages(messages: list[dict[str, Any]], *, id: str) -> Trajectory:
    """Convert an OpenAI-style message list into a trajectory.

    The last assistant message with text is the answer; tool calls and tool results become steps,
    so nothing in the conversation is lost.
    """
    steps: list[Step] = []
    answer = ""
    for i, msg in enumerate(messages):
        if not isinstance(msg, dict) or "role" not in msg:
            raise ValueError(f"messages[{i}]: each message needs a 'role'")
        role = msg["role"]
        content = msg.get("content") or ""
        if isinstance(content, list):  # content parts
            content = "".join(p.get("text", "") for p in content if isinstance(p, dict))
        if not isinstance(content, str):
            raise ValueError(f"messages[{i}].content: expected a string or a list of text parts")
        if role == "assistant":
            for call in msg.get("tool_calls") or []:
                fn = call.get("function", {}) if isinstance(call, dict) else {}
                args = fn.get("arguments")
                steps.append(Step(type="tool_call", role=role, tool=fn.get("name"),
                                  content=args if isinstance(args, str) else json.dumps(args),
                                  arguments=args))
            if content:
                steps.append(Step(type="message", role=role, content=content))
                answer = content
        elif role == "tool":
            steps.append(Step(type="tool_result", role=role, tool=msg.get("name"), content=content))
        else:
            steps.append(Step(type="message", role=role, content=content))
    return Trajectory(id=id, answer=answer, steps=steps)


class TaskInput(BaseModel):
    """One task with its candidates: the unit the router and the evaluators work on."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    task: Task
    trajectories: list[Trajectory] = Field(min_length=1)

    @field_validator("trajectories", mode="before")
    @classmethod
    def _accept_message_lists(cls, value: Any) -> Any:
        if not isinstance(value, list):
            return value
        out = []
        for i, item in enumerate(value):
            if isinstance(item, list):
                out.append(trajectory_from_messages(item, id=f"t{i}"))
            elif isinstance(item, dict) and "messages" in item and "answer" not in item:
                extra = set(item) - {"id", "messages", "metadata"}
                if extra:
                    raise ValueError(f"trajectories[{i}]: unknown keys {sorted(extra)} beside 'messages'")
                t = trajectory_from_messages(item["messages"], id=str(item.get("id", f"t{i}")))
                out.append(t.model_copy(update={"metadata": item.get("metadata", {})}))
            else:
                out.append(item)
        return out

    @model_validator(mode="after")
    def _unique_ids(self) -> "TaskInput":
        ids = [t.id for t in self.trajectories]
        dupes = sorted({i for i in ids if ids.count(i) > 1})
        if dupes:
            raise ValueError(f"trajectories: duplicate trajectory ids {dupes}")
        return self
