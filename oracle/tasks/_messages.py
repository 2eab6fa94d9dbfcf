"""OpenAI-style message lists as trajectories: typed at the boundary, then converted.

Why typed models instead of reading dicts: the conversion used to call ``.get`` on whatever it
found, so a ``tool_calls`` that was a string, a ``function`` that was a list or a ``messages``
that was a number ended in ``AttributeError``/``TypeError`` (187 of 12,000 fuzzed inputs). Now
the list is validated first and a wrong shape is bad input naming its field, e.g.
``trajectories[2].messages[0].tool_calls[1].function: Input should be an object``. Unknown keys
inside a message (``refusal``, ``audio``...) are ignored, as the OpenAI format grows; unknown
keys beside ``messages`` in a trajectory are rejected, as everywhere else in a task file.
"""

from __future__ import annotations

import json
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError
from pydantic_core import PydanticCustomError

from oracle.tasks._validation_errors import NAMED_FIELD_ERROR, _dotted

_OPEN = ConfigDict(extra="ignore", frozen=True)


class FunctionCall(BaseModel):
    """The ``function`` of a tool call: a name and its arguments (a JSON string or an object)."""

    model_config = _OPEN
    name: str | None = None
    arguments: Any = None


class ToolCall(BaseModel):
    """One entry of an assistant message's ``tool_calls``."""

    model_config = _OPEN
    id: str | None = None
    type: str | None = None
    function: FunctionCall = Field(default_factory=FunctionCall)


class ContentPart(BaseModel):
    """One part of a multi-part ``content``; only text parts carry text."""

    model_config = _OPEN
    type: str | None = None
    text: str | None = None


class ChatTurn(BaseModel):
    """One message of the conversation."""

    model_config = _OPEN
    role: str = Field(min_length=1)
    content: str | list[ContentPart] | None = None
    name: str | None = None
    """Tool name on a ``tool`` message."""
    tool_calls: list[ToolCall] | None = None
    tool_call_id: str | None = None
    """On a ``tool`` message: the id of the call it answers."""

    def text(self) -> str:
        if isinstance(self.content, list):
            return "".join(part.text or "" for part in self.content)
        return self.content or ""


class MessagesTrajectory(BaseModel):
    """``{"id": ..., "messages": [...], "metadata": {...}}`` in a task file."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    id: str | int | None = None
    messages: list[ChatTurn]
    metadata: dict[str, Any] = Field(default_factory=dict)


_UNION_TAGS = {"str", "list[ContentPart]", "int", "none"}
"""Branch names pydantic puts into a union's error location; not part of the field's name."""

_TURNS: TypeAdapter[list[ChatTurn]] = TypeAdapter(list[ChatTurn])


def _named_error(exc: ValidationError, prefix: tuple[Any, ...]) -> PydanticCustomError:
    """The first error of a message list as one error whose context names the full field."""
    err = exc.errors()[0]
    field = _dotted(prefix + tuple(p for p in err["loc"] if p not in _UNION_TAGS))
    reason = "unknown key" if err["type"] == "extra_forbidden" else err["msg"]
    more = len(exc.errors()) - 1
    if more:
        reason += f" (and {more} more error{'s' * (more != 1)} in this message list)"
    return PydanticCustomError(NAMED_FIELD_ERROR, "{field}: {reason}", {"field": field, "reason": reason})


def _steps_and_answer(turns: list[ChatTurn]) -> tuple[list[dict[str, Any]], str]:
    """The last assistant text is the answer; tool calls and results become steps (nothing lost)."""
    steps: list[dict[str, Any]] = []
    answer = ""
    for turn in turns:
        content = turn.text()
        if turn.role == "assistant":
            for call in turn.tool_calls or []:
                args = call.function.arguments
                steps.append({"type": "tool_call", "role": turn.role, "tool": call.function.name,
                              "content": args if isinstance(args, str) else _dump(args),
                              "arguments": args, "tool_call_id": call.id})
            if content:
                steps.append({"type": "message", "role": turn.role, "content": content})
                answer = content
        elif turn.role == "tool":
            steps.append({"type": "tool_result", "role": turn.role, "tool": turn.name, "content": content,
                          "tool_call_id": turn.tool_call_id})
        else:
            steps.append({"type": "message", "role": turn.role, "content": content})
    return steps, answer


def _dump(value: Any) -> str:
    try:
        return json.dumps(value, ensure_ascii=False, default=str)
    except (ValueError, TypeError, RecursionError):
        return repr(value)


def trajectory_data_from_messages(messages: Any, *, id: str, index: int | None = None) -> dict[str, Any]:
    """An OpenAI-style message list -> trajectory fields (``id``, ``answer``, ``steps``).

    Raises ``PydanticCustomError`` naming the field (``trajectories[i].messages[j]...``) when the
    list is not a list of messages; ``index`` is the trajectory's position, for that name.
    """
    prefix: tuple[Any, ...] = ("trajectories", index, "messages") if index is not None else ("messages",)
    try:
        turns = _TURNS.validate_python(messages)
    except ValidationError as exc:
        raise _named_error(exc, prefix) from None
    steps, answer = _steps_and_answer(turns)
    return {"id": id, "answer": answer, "steps": steps}


def trajectory_data_from_item(item: dict[str, Any], index: int) -> dict[str, Any]:
    """``{"id", "messages", "metadata"}`` -> trajectory fields; unknown keys beside them are refused."""
    try:
        parsed = MessagesTrajectory.model_validate(item)
    except ValidationError as exc:
        raise _named_error(exc, ("trajectories", index)) from None
    steps, answer = _steps_and_answer(parsed.messages)
    tid = str(parsed.id) if parsed.id is not None else f"t{index}"
    return {"id": tid, "answer": answer, "steps": steps, "metadata": parsed.metadata}
