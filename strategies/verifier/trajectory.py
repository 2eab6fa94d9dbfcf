"""An agent trajectory as evidence: its tool calls and tool results, and what a check may trust.

Trust model. A trajectory is what the agent framework recorded: the model's messages and tool
calls, and the tool messages the framework wrote back. The verifier trusts that recording, not the
model's prose:

- Only ``tool_call`` steps are calls. A call described in an assistant message ("I searched for
  ...") is text and counts for nothing.
- Only ``tool_result`` steps written by the environment count as results: role ``tool`` (or no
  role, our own ``steps`` format). A ``tool_result`` step with any other role (``assistant``,
  ``user``) is the model claiming an output; it is listed as ignored, never checked. A result must
  answer a call made before it: with an id, an earlier call with that id; without one, an earlier
  call of that tool (or any earlier call when the step names no tool). Each call is answered at
  most once; a second result for the same call is ignored. A result pasted into the final answer
  is text, so a candidate that fabricates ``{"status": "refunded"}`` in its reply satisfies no
  ``tool_result`` check.
- What a trusted tool message says is taken as what the tool returned: the verifier cannot replay
  the tool. Where the harness that records trajectories is itself untrusted, a ``final_state``
  check (code that runs in the sandbox) can cross-check results against the task's own data.

Tool-call arguments may be an object or the JSON string a model produced; both decode to the same
object. A string that is not JSON, or JSON that is not an object, is recorded as the call's
argument problem, so a check that compares arguments reports it as a mismatch instead of failing.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from oracle.tasks.task import Step, Trajectory

ENVIRONMENT_ROLES = (None, "tool")
"""Roles whose ``tool_result`` steps come from the environment, not the model."""


@dataclass(frozen=True)
class CallRecord:
    """One tool call of the candidate, in order."""

    number: int
    """1-based position among the candidate's tool calls (the "call 3" of a message)."""
    step: int
    """Index in ``trajectory.steps``."""
    tool: str | None
    call_id: str | None
    args: dict[str, Any] | None
    """The decoded arguments; None when they could not be decoded (see ``args_problem``)."""
    args_problem: str | None = None


@dataclass(frozen=True)
class ResultRecord:
    """One tool result the verifier counts."""

    step: int
    tool: str | None
    """The tool's name, from the step or from the call it answers."""
    call_id: str | None
    content: str


@dataclass(frozen=True)
class IgnoredResult:
    """A ``tool_result`` step that does not count, and why (shown when a selection finds nothing)."""

    step: int
    tool: str | None
    call_id: str | None
    why: str


def decode_arguments(raw: Any) -> tuple[dict[str, Any] | None, str | None]:
    """Arguments as an object, or None and the reason they are not one."""
    if raw is None:
        return {}, None
    if isinstance(raw, str):
        if not raw.strip():
            return {}, None
        try:
            raw = json.loads(raw)
        except ValueError as exc:  # JSONDecodeError, and ints past the digit limit
            return None, f"arguments are not valid JSON ({exc})"
        except RecursionError:
            return None, "arguments are not valid JSON (nested too deeply)"
    if not isinstance(raw, dict):
        return None, f"arguments are a JSON {_json_kind(raw)}, not an object"
    return raw, None


def _json_kind(value: Any) -> str:
    if isinstance(value, list):
        return "array"
    if isinstance(value, str):
        return "string"
    if isinstance(value, bool):
        return "boolean"
    if value is None:
        return "null"
    return "number"


def _raw_arguments(step: Step) -> Any:
    if step.arguments is not None:
        return step.arguments
    return step.content if step.content.strip() else None


def tool_calls(trajectory: Trajectory) -> list[CallRecord]:
    """The candidate's tool calls in order, arguments decoded."""
    out: list[CallRecord] = []
    for i, step in enumerate(trajectory.steps):
        if step.type != "tool_call":
            continue
        args, problem = decode_arguments(_raw_arguments(step))
        out.append(CallRecord(number=len(out) + 1, step=i, tool=step.tool, call_id=step.tool_call_id,
                              args=args, args_problem=problem))
    return out


def tool_results(trajectory: Trajectory) -> tuple[list[ResultRecord], list[IgnoredResult]]:
    """The results that count, and the ``tool_result`` steps that do not (see the trust model)."""
    calls_by_id: dict[str, str | None] = {}
    unanswered: list[tuple[str | None, str | None]] = []  # (call id, tool) of earlier calls
    answered: set[str] = set()
    counted: list[ResultRecord] = []
    ignored: list[IgnoredResult] = []
    for i, step in enumerate(trajectory.steps):
        if step.type == "tool_call":
            if step.tool_call_id is not None:
                calls_by_id.setdefault(step.tool_call_id, step.tool)
            unanswered.append((step.tool_call_id, step.tool))
            continue
        if step.type != "tool_result":
            continue
        cid = step.tool_call_id
        if step.role not in ENVIRONMENT_ROLES:
            ignored.append(IgnoredResult(i, step.tool, cid, f"written by role {step.role!r}, not by a tool"))
            continue
        if cid is not None:
            if cid not in calls_by_id:
                ignored.append(IgnoredResult(i, step.tool, cid, f"answers no earlier call with id {cid!r}"))
                continue
            if cid in answered:
                ignored.append(IgnoredResult(i, step.tool, cid, f"call {cid!r} was already answered"))
                continue
            answered.add(cid)
            unanswered = [u for u in unanswered if u[0] != cid]
            counted.append(ResultRecord(i, step.tool or calls_by_id[cid], cid, step.content))
            continue
        match = next((k for k, (_, tool) in enumerate(unanswered) if step.tool is None or tool == step.tool), None)
        if match is None:
            what = f"of tool {step.tool!r}" if step.tool else ""
            ignored.append(IgnoredResult(i, step.tool, None, f"answers no earlier unanswered call {what}".strip()))
            continue
        call_id, tool = unanswered.pop(match)
        if call_id is not None:
            answered.add(call_id)
        counted.append(ResultRecord(i, step.tool or tool, call_id, step.content))
    return counted, ignored


def trajectory_json(trajectory: Trajectory) -> dict[str, Any]:
    """What a ``final_state`` check receives: plain JSON, arguments decoded where they decode, and
    each tool result marked ``counted`` (True when the trust model above counts it)."""
    counted = {r.step for r in tool_results(trajectory)[0]}
    steps = []
    for i, step in enumerate(trajectory.steps):
        entry = step.model_dump(mode="json")
        entry["args"] = decode_arguments(_raw_arguments(step))[0] if step.type == "tool_call" else None
        entry["counted"] = (i in counted) if step.type == "tool_result" else None
        steps.append(entry)
    return {"id": trajectory.id, "answer": trajectory.answer, "output": trajectory.output, "steps": steps}


MAX_FINAL_STATE_BYTES = 16 * 1024 * 1024
"""The trajectory travels to the sandbox inside one control message (limit: wire.MAX_FRAME)."""

_FALSE_IS_FAILURE = '''

_oracle_check = check


def check(trajectory):
    if _oracle_check(trajectory) is False:
        raise AssertionError("check(trajectory) returned False")
'''


def final_state_plan(code: str, trajectory: Trajectory, *, timeout_s: float, output_limit: int) -> Any:
    """The sandbox run of a ``final_state`` check: one process that holds the test's code and the
    trajectory as decoded JSON, and no candidate code at all (the trajectory is data; ``json.loads``
    runs nothing). It uses the worker's single-process mode, and its report pipe, which only that
    process holds, carries the verdict. Raises ValueError when the trajectory is too large to send.
    """
    from oracle.sandbox.runs import RunPlan

    text = json.dumps(trajectory_json(trajectory), ensure_ascii=True, default=str)
    if len(text) > MAX_FINAL_STATE_BYTES:
        raise ValueError(f"the trajectory is {len(text)} bytes as JSON; a final_state check takes at most "
                         f"{MAX_FINAL_STATE_BYTES}")
    data = f"import json as _json\ntrajectory = _json.loads({text!r})\ndel _json\n"
    return RunPlan(mode="in_process", language="python",
                   candidate_spec={"code": data, "entry_point": "trajectory"},
                   test_spec={"kind": "check", "entry_point": "trajectory", "prompt_code": None,
                              "test_code": code + _FALSE_IS_FAILURE},
                   timeout_s=timeout_s, output_limit=output_limit)
