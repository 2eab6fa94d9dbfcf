"""Prompt building for the LLM judge: versioned templates, enclosed material, reply schemas.

The templates live in ``strategies/llm_judge/templates/*.txt`` and are filled with ``string.Template`` (values
are inserted verbatim, never re-expanded, so a ``$`` in a candidate is harmless). Their sha256
goes into every result's provenance, so a prompt edit shows up as a changed hash.

Candidate text, the task and the reference are untrusted material. Each is enclosed the one way
both judges enclose text (``oracle.strategies._judging.enclosure``): a block whose boundary is derived from
its own content, with every tag-like sequence inside escaped, so the text cannot close its block
or open a new one. The system message tells the judge that block contents are data.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from string import Template
from typing import Any

from oracle.providers.types import ChatMessage
from oracle.strategies._judging.enclosure import enclose, inline
from oracle.tasks.task import Task, Trajectory

PROMPT_DIR = Path(__file__).resolve().parent / "templates"
TEMPLATE_NAMES = ("judge_system_v1", "pointwise_user_v1", "pairwise_user_v1", "reference_section_v1",
                  "repair_user_v1")
COMMIT_TEMPLATE_NAMES = ("commit_user_v1", "own_answer_section_v1")
"""Used only with ``llm_judge.commit_first`` (their hashes join the provenance then)."""
DEFAULT_CRITERION = "Overall quality: how correctly, completely, clearly and usefully the response fulfils the task."

@lru_cache(maxsize=None)
def template(name: str) -> Template:
    return Template((PROMPT_DIR / f"{name}.txt").read_text(encoding="utf-8"))


@lru_cache(maxsize=None)
def template_hashes() -> dict[str, str]:
    """sha256 of every template file (bytes as shipped)."""
    return {name: hashlib.sha256((PROMPT_DIR / f"{name}.txt").read_bytes()).hexdigest() for name in TEMPLATE_NAMES}


@lru_cache(maxsize=None)
def commit_template_hashes() -> dict[str, str]:
    return {name: hashlib.sha256((PROMPT_DIR / f"{name}.txt").read_bytes()).hexdigest()
            for name in COMMIT_TEMPLATE_NAMES}


def task_template_hashes(task: Task | None) -> dict[str, str]:
    """The template hashes a task is judged with: a task's (or its rubric's) ``judge_prompt``
    replaces the built-in pointwise template, and the hash says so."""
    hashes = dict(template_hashes())
    if task is not None and task.judge_prompt is not None:
        del hashes["pointwise_user_v1"]
        hashes["pointwise_user_task"] = hashlib.sha256(task.judge_prompt.encode("utf-8")).hexdigest()
    return hashes


def prompt_hash(task: Task | None = None) -> str:
    """One hash over all templates in use, for a quick equality check between runs."""
    joined = "".join(f"{k}={v}\n" for k, v in sorted(task_template_hashes(task).items()))
    return hashlib.sha256(joined.encode()).hexdigest()


def candidate_text(t: Trajectory) -> str:
    """What the judge sees of a candidate: the answer, its code, and its steps if any."""
    parts = [t.answer] if t.answer else []
    if t.code and t.code not in t.answer:
        parts.append("Code:\n" + t.code)
    if t.steps:
        lines = [f"[{i}] {s.type}{' ' + s.tool if s.tool else ''}: {s.content}" for i, s in enumerate(t.steps, 1)]
        parts.append("Steps taken:\n" + "\n".join(lines))
    if t.output:
        parts.append("Execution output:\n" + t.output)
    return "\n\n".join(parts) if parts else "(empty response)"


@dataclass(frozen=True)
class RubricItem:
    """A criterion with the id the judge must use in its reply."""

    id: str
    text: str
    weight: float


def rubric(task: Task) -> list[RubricItem]:
    """The task's criteria as c1, c2, ...; a single default criterion when the task has none."""
    if not task.criteria:
        return [RubricItem("overall", DEFAULT_CRITERION, 1.0)]
    return [RubricItem(f"c{i}", c.criterion, c.weight) for i, c in enumerate(task.criteria, 1)]


def _reference_section(task: Task, own_answer: str | None = None) -> str:
    """The task author's reference, or (commit-first grading) the judge's own answer, marked as such."""
    if own_answer is not None:
        section = template("own_answer_section_v1").substitute(reference_block=enclose("reference", own_answer))
        return section.rstrip("\n") + "\n"
    if not task.reference:
        return ""
    section = template("reference_section_v1").substitute(reference_block=enclose("reference", task.reference))
    return section.rstrip("\n") + "\n"


def _task_block(task: Task) -> str:
    """The task as the judge reads it: the prompt, its description, and any clarification a
    reviewer gave (``Task.clarifications``), all inside one enclosed block."""
    text = task.prompt if not task.description else f"{task.prompt}\n\n{task.description}"
    notes = task.clarifications()
    if notes:
        text += "\n\nClarifications:\n" + "\n".join(f"- {note}" for note in notes)
    return enclose("task", text)


def _system() -> ChatMessage:
    return ChatMessage(role="system", content=template("judge_system_v1").substitute())


def pointwise_messages(task: Task, candidate: Trajectory, items: list[RubricItem], *,
                       scale_min: int, scale_max: int, own_answer: str | None = None) -> list[ChatMessage]:
    entries = ", ".join(f'"{it.id}": {{"rationale": "<why>", "score": <integer {scale_min}-{scale_max}>}}'
                        for it in items)
    # A task's own template was checked at load (known variables only, required ones present), and
    # substitute() still raises on anything missing: never an empty string in the prompt.
    tpl = Template(task.judge_prompt) if task.judge_prompt is not None else template("pointwise_user_v1")
    user = tpl.substitute(
        scale_min=scale_min, scale_max=scale_max, task_block=_task_block(task),
        reference_section=_reference_section(task, own_answer),
        criteria_list="\n".join(f"- {it.id}: {inline(it.text)}" for it in items),
        response_block=enclose("response", candidate_text(candidate)),
        reply_example='{"criteria": {' + entries + '}}',
    )
    return [_system(), ChatMessage(role="user", content=user)]


def pairwise_messages(task: Task, first: Trajectory, second: Trajectory,
                      items: list[RubricItem] | None, own_answer: str | None = None) -> list[ChatMessage]:
    criteria_clause = criteria_section = ""
    if items:
        criteria_clause = ", judged on the criteria listed"
        criteria_section = "Criteria:\n" + "\n".join(f"- {inline(it.text)}" for it in items) + "\n"
    user = template("pairwise_user_v1").substitute(
        criteria_clause=criteria_clause, task_block=_task_block(task),
        reference_section=_reference_section(task, own_answer), criteria_section=criteria_section,
        response_a_block=enclose("response", candidate_text(first), "A"),
        response_b_block=enclose("response", candidate_text(second), "B"),
    )
    return [_system(), ChatMessage(role="user", content=user)]


def commit_messages(task: Task) -> list[ChatMessage]:
    """Commit-first grading: the task alone, no candidate, no reference; the judge answers it."""
    return [_system(), ChatMessage(role="user", content=template("commit_user_v1").substitute(
        task_block=_task_block(task)))]


COMMIT_SCHEMA: dict[str, Any] = {
    "type": "object", "additionalProperties": False, "required": ["answer"],
    "properties": {"answer": {"type": "string"}},
}


def repair_messages(original: list[ChatMessage], raw_reply: str, problem: str) -> list[ChatMessage]:
    """The original conversation, the unreadable reply, and one request to fix it."""
    return [*original, ChatMessage(role="assistant", content=raw_reply),
            ChatMessage(role="user", content=template("repair_user_v1").substitute(problem=inline(problem)))]


def pointwise_schema(items: list[RubricItem], scale_min: int, scale_max: int) -> dict[str, Any]:
    entry = {"type": "object", "additionalProperties": False, "required": ["rationale", "score"],
             "properties": {"rationale": {"type": "string"},
                            "score": {"type": "integer", "enum": list(range(scale_min, scale_max + 1))}}}
    return {"type": "object", "additionalProperties": False, "required": ["criteria"],
            "properties": {"criteria": {"type": "object", "additionalProperties": False,
                                        "required": [it.id for it in items],
                                        "properties": {it.id: entry for it in items}}}}


PAIRWISE_SCHEMA: dict[str, Any] = {
    "type": "object", "additionalProperties": False, "required": ["rationale", "winner"],
    "properties": {"rationale": {"type": "string"}, "winner": {"type": "string", "enum": ["A", "B"]}},
}
