"""Deterministic routing signals: a pure function of the task, its candidates and optional history.

No I/O, clock or randomness. Every text a signal reads is read only up to a bound: cue densities
and the scale/rationale checks read a prefix of the prompt (``routing.cue_prefix_chars``); answers,
outputs, the reference and each criterion are read for their first ``routing.scan_chars``
characters (a criterion's end-anchored check reads its last ones). So routing a task with 1 MB
fields costs what routing one with 100-byte fields does. Every field documents its range.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal, Mapping, Sequence

from oracle.routing.settings import CUE_PREFIX_CHARS, SCAN_CHARS, ReferenceAnswerSettings
from oracle.tasks.task import Task, Trajectory
from oracle.tasks.testspec import REPO_KINDS
from oracle.routing._text_cues import cue_counts, has_code_line, is_yes_no_check, prompt_phrases

RUNNABLE_LANGUAGES = frozenset({"python", "javascript"})
TRAJECTORY_TEST_KINDS = frozenset({"tool_calls", "tool_result", "final_state"})
"""Test kinds that check an agent's steps rather than its code."""
TOOL_STEP_TYPES = frozenset({"tool_call", "tool_result"})
_LANGUAGE_ALIASES = {"py": "python", "python3": "python", "js": "javascript", "node": "javascript"}
ANSWER_KEY_CHARS: int = ReferenceAnswerSettings.model_fields["short_reference_chars"].default
"""Default of ``routing.policies.reference_answer.short_reference_chars`` (``has_answer_key``)."""
__all__ = ["ANSWER_KEY_CHARS", "CUE_PREFIX_CHARS", "SCAN_CHARS", "Signals", "extract"]


@dataclass(frozen=True, kw_only=True)
class Signals:
    """What the router knows about a task before any evaluator runs (immutable).

    A plain dataclass, not a pydantic model: ``extract`` computes every value with its type, so
    there is nothing to validate.
    """

    has_reference: bool
    """The task carries an expected answer."""
    reference_chars: int
    """Length of the reference (0..); short references read as answer keys."""
    has_answer_key: bool
    """The reference is an answer key to check answers against: a reference of at most
    ``routing.policies.reference_answer.short_reference_chars`` characters and no candidate code.
    Computed here, once, so every policy that asks "is this a reference check?" reads one notion
    with one threshold."""
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
    has_context: bool
    """The task carries source text (``context``) an answer should be grounded in."""
    has_tool_steps: bool
    """At least one candidate's steps hold a tool call or a tool result (an agent run)."""
    has_trajectory_tests: bool
    """The task carries expected tool calls, tool results or a final-state check
    (tests of kind ``tool_calls``, ``tool_result`` or ``final_state``)."""
    has_repository: bool
    """The task names a repository (``task.repository``) and carries a ``repo_tests`` test: the
    candidates are changes to that repository, judged by its own test suite."""
    claim_check_requested: bool
    """The task sets ``claim_check: true``."""
    asks_claim_check: bool
    """The prompt asks to verify a claim against evidence ("is this claim supported ...?")."""
    claim_checkable: bool
    """One candidate, text evidence (reference or context), and a claim check requested or asked for:
    the decision judge can run its confirmation-versus-challenge questions."""

    def as_dict(self) -> dict[str, Any]:
        """The values by field name, in field order (what the route's trace records).

        Every field is a scalar, so this shallow copy is what ``dataclasses.asdict`` returns,
        without its recursive copy of each value."""
        return dict(vars(self))


def _normalize_language(language: str | None, scan_chars: int) -> str | None:
    if not language:
        return None
    lang = language[:scan_chars].strip().lower()
    return _LANGUAGE_ALIASES.get(lang, lang)


def _has_text(text: str | None, scan_chars: int) -> bool:
    """Some non-whitespace among the first ``scan_chars`` characters."""
    if not text:
        return False
    return not text[:scan_chars].isspace()


def _joined_prefix(texts: list[str], limit: int) -> str:
    """``"\n".join(texts)[:limit]`` without joining (or even reading) past ``limit``."""
    parts: list[str] = []
    room = limit
    for text in texts:
        if parts:
            if room <= 0:
                break
            parts.append("\n")
            room -= 1
        piece = text[:room]
        parts.append(piece)
        room -= len(piece)
        if room <= 0:
            break
    return "".join(parts)


def _share(part: int, whole: int) -> float:
    """``part / whole`` rounded to 6 digits; 0 when ``whole`` is 0 (none and all are exact already)."""
    if part == 0 or whole == 0:
        return 0.0
    return 1.0 if part == whole else round(part / whole, 6)


def extract(task: Task, trajectories: Sequence[Trajectory], *, history: Mapping[str, float] | None = None,
            prefix_chars: int = CUE_PREFIX_CHARS, scan_chars: int = SCAN_CHARS,
            answer_key_chars: int = ANSWER_KEY_CHARS) -> Signals:
    """The signals of ``task`` and its candidates. ``history`` maps task id -> prior hardness in
    0..1 (optional); ``prefix_chars`` and ``scan_chars`` bound what is read (module docstring);
    ``answer_key_chars``: the longest reference that is an answer key (``has_answer_key``)."""
    prompt = task.prompt
    prefix = prompt[:prefix_chars]
    if task.description:
        prefix = prefix + "\n" + task.description[: max(0, prefix_chars - len(prefix))]
    lower = prefix.lower()
    n_words, n_verifiable, n_judgment = cue_counts(lower)
    n_words = max(1, n_words)

    criteria = task.criteria
    n_criteria = len(criteria)
    if n_criteria:
        criteria_text = [c.criterion for c in criteria]
        yes_no = sum(1 for c in criteria_text if is_yes_no_check(c, scan_chars))
        scan = lower + "\n" + _joined_prefix(criteria_text, prefix_chars).lower()
    else:
        yes_no, scan = 0, lower

    n = len(trajectories)
    n_code = 0
    has_output = tool_steps = False
    answer_chars = 0
    for t in trajectories:  # one pass: code (field, fence, code-shaped line), output, answer length, steps
        answer = t.answer
        answer_chars += len(answer)
        # The answer's first scan_chars characters, read in place (no slice is copied).
        if t.code or answer.find("```", 0, scan_chars) != -1 or has_code_line(answer, scan_chars):
            n_code += 1
        if not has_output:
            has_output = _has_text(t.output, scan_chars)
        if not tool_steps and t.steps:
            tool_steps = any(step.type in TOOL_STEP_TYPES for step in t.steps)
    language = _normalize_language(task.language, scan_chars)
    tests = task.tests
    n_tests = len(tests)
    trajectory_tests = any(test.kind in TRAJECTORY_TEST_KINDS for test in tests)
    repository = task.repository is not None and any(test.kind in REPO_KINDS for test in tests)
    if language is None and (n_tests or n_code):
        language = "python"
    reference = task.reference
    has_reference = _has_text(reference, scan_chars)
    has_context = _has_text(task.context, scan_chars)
    n_questions = len(task.questions)
    graded, rationale, asked = prompt_phrases(scan, lower)  # lower is a prefix of scan
    requested = task.claim_check
    reference_chars = len(reference) if reference else 0
    return Signals(
        has_reference=has_reference,
        reference_chars=reference_chars,
        has_answer_key=has_reference and reference_chars <= answer_key_chars and n_code == 0,
        has_tests=n_tests > 0,
        tests_runnable=n_tests > 0 and language in RUNNABLE_LANGUAGES,
        n_tests=n_tests,
        language=language,
        has_code=n_code > 0,
        code_share=_share(n_code, n),
        has_execution_output=has_output,
        n_candidates=n,
        n_questions=n_questions,
        n_criteria=n_criteria,
        yes_no_criteria_share=_share(yes_no, n_criteria),
        has_closed_question=n_questions > 0 or (n_criteria > 0 and yes_no == n_criteria),
        difficulty=task.difficulty,
        verifiable_cue_density=_share(n_verifiable, n_words),
        judgment_cue_density=_share(n_judgment, n_words),
        asks_graded_scale=graded,
        asks_rationale=rationale,
        prompt_chars=len(prompt),
        mean_answer_chars=round(answer_chars / n, 3) if n else 0.0,
        prior_hardness=None if history is None or task.id not in history else float(history[task.id]),
        evaluator_override=task.evaluator,
        has_context=has_context,
        has_tool_steps=tool_steps,
        has_trajectory_tests=trajectory_tests,
        has_repository=repository,
        claim_check_requested=requested,
        asks_claim_check=asked,
        claim_checkable=n == 1 and (has_reference or has_context) and (requested or asked),
    )
