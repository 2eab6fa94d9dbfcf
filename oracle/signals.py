"""Deterministic routing signals: a pure function of the task, its candidates and optional history.

No I/O, clock or randomness. Cue densities read only a capped prefix of the prompt, so a 1 MB
prompt costs what a 4 KB one does. Every field documents its range.
"""

from __future__ import annotations

from typing import Any, Literal, Mapping

from pydantic import BaseModel, ConfigDict

from oracle._fastmodel import build
from oracle.task import Task, Trajectory
from oracle.text_cues import (YES_NO_CHECK, asks_graded_scale, asks_rationale, cue_counts,
                              has_code_line)

RUNNABLE_LANGUAGES = frozenset({"python", "javascript"})
CUE_PREFIX_CHARS = 2048
"""Cue densities read this many leading characters of the prompt (config: routing.cue_prefix_chars)."""
_LANGUAGE_ALIASES = {"py": "python", "python3": "python", "js": "javascript", "node": "javascript"}


class Signals(BaseModel):
    """What the router knows about a task before any evaluator runs."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    has_reference: bool
    """The task carries an expected answer."""
    reference_chars: int
    """Length of the reference (0..); short references read as answer keys."""
    has_tests: bool
    """The task carries at least one test."""
    tests_runnable: bool
    """Tests present and the language is one the verifier runs (python, javascript)."""
    n_tests: int
    """Number of tests (0..)."""
    language: str | None
    """Normalized language: the task's, else python when tests or code suggest it, else None."""
    has_code: bool
    """At least one candidate carries code (field, fenced block, or code-shaped answer)."""
    code_share: float
    """Share of candidates carrying code (0..1)."""
    has_execution_output: bool
    """At least one candidate reports execution output."""
    n_candidates: int
    """Number of candidate trajectories (1..)."""
    n_questions: int
    """Explicit fixed-option questions (0..)."""
    n_criteria: int
    """Rubric criteria (0..)."""
    yes_no_criteria_share: float
    """Share of criteria phrased as yes/no checks (0..1; 0 when there are none)."""
    has_closed_question: bool
    """Explicit questions, or criteria that all read as yes/no checks."""
    difficulty: Literal["easy", "medium", "hard"] | None
    """Difficulty as stated by the task."""
    verifiable_cue_density: float
    """Share of prompt words (stemmed, capped prefix) that name checkable work (0..1)."""
    judgment_cue_density: float
    """Share of prompt words (stemmed, capped prefix) that name judged work (0..1)."""
    asks_graded_scale: bool
    """The prompt or criteria ask for a rating on a scale."""
    asks_rationale: bool
    """The prompt or criteria ask for a written reason."""
    prompt_chars: int
    """Full prompt length in characters (0..)."""
    mean_answer_chars: float
    """Mean candidate answer length in characters (0..)."""
    prior_hardness: float | None
    """From history: share of earlier evaluations of this task that failed or escalated (0..1)."""
    evaluator_override: str | None
    """The task's explicit evaluator, if any."""


def _normalize_language(language: str | None) -> str | None:
    if not language:
        return None
    lang = language.strip().lower()
    return _LANGUAGE_ALIASES.get(lang, lang)


def _has_code(t: Trajectory) -> bool:
    if t.code:
        return True
    head = t.answer[:2000]
    if "```" in head:
        return True
    return has_code_line(head)


def extract_values(task: Task, trajectories: tuple[Trajectory, ...] | list[Trajectory], *,
                   history: Mapping[str, float] | None = None, prefix_chars: int = CUE_PREFIX_CHARS) -> dict[str, Any]:
    """The signal values as a plain dict (the router's hot path and the trace both use it)."""
    prefix = task.prompt[:prefix_chars]
    if task.description:
        prefix = (prefix + "\n" + task.description[: max(0, prefix_chars - len(prefix))])
    lower = prefix.lower()
    n_words, n_verifiable, n_judgment = cue_counts(lower)
    n_words = max(1, n_words)
    verifiable = n_verifiable / n_words
    judgment = n_judgment / n_words

    criteria_text = [c.criterion for c in task.criteria]
    yes_no = sum(1 for c in criteria_text if YES_NO_CHECK.search(c.strip()))
    yes_no_share = yes_no / len(criteria_text) if criteria_text else 0.0
    closed = bool(task.questions) or (bool(criteria_text) and yes_no == len(criteria_text))

    scan = lower + "\n" + "\n".join(criteria_text)[:prefix_chars].lower() if criteria_text else lower
    code_flags = [_has_code(t) for t in trajectories]
    language = _normalize_language(task.language)
    if language is None and (task.tests or any(code_flags)):
        language = "python"
    n = len(trajectories)
    reference = task.reference
    return {
        "has_reference": reference is not None and reference.strip() != "",
        "reference_chars": len(reference or ""),
        "has_tests": bool(task.tests),
        "tests_runnable": bool(task.tests) and language in RUNNABLE_LANGUAGES,
        "n_tests": len(task.tests),
        "language": language,
        "has_code": any(code_flags),
        "code_share": round(sum(code_flags) / n, 6) if n else 0.0,
        "has_execution_output": any(bool(t.output and t.output.strip()) for t in trajectories),
        "n_candidates": n,
        "n_questions": len(task.questions),
        "n_criteria": len(criteria_text),
        "yes_no_criteria_share": round(yes_no_share, 6),
        "has_closed_question": closed,
        "difficulty": task.difficulty,
        "verifiable_cue_density": round(verifiable, 6),
        "judgment_cue_density": round(judgment, 6),
        "asks_graded_scale": asks_graded_scale(scan),
        "asks_rationale": asks_rationale(scan),
        "prompt_chars": len(task.prompt),
        "mean_answer_chars": round(sum(len(t.answer) for t in trajectories) / n, 3) if n else 0.0,
        "prior_hardness": None if history is None or task.id not in history else float(history[task.id]),
        "evaluator_override": task.evaluator,
    }


def extract(task: Task, trajectories: tuple[Trajectory, ...] | list[Trajectory], *,
            history: Mapping[str, float] | None = None, prefix_chars: int = CUE_PREFIX_CHARS) -> Signals:
    """Compute the signals. ``history`` maps task id -> prior hardness in 0..1 (optional)."""
    values = extract_values(task, trajectories, history=history, prefix_chars=prefix_chars)
    # Values are computed here with known types; skip re-validation on the hot path.
    return build(Signals, values)
