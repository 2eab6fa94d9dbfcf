"""One mapping from an evaluation framework's sample to an oracle task, and back to a verdict.

Frameworks score one model output per sample; oracle-router judges a task with candidates. The
mapping, the same for every adapter:

- prompt: the sample's input (text as is; a mapping's ``prompt``, ``input`` or ``question`` key, or
  its only value; anything else as canonical JSON);
- candidate: the output being scored becomes trajectory ``output`` (its answer; code inside is
  what the verifier runs);
- reference: the sample's expected output or target, when it has one;
- everything else comes from an ``oracle`` spec: a mapping of ``Task`` fields (``criteria``,
  ``tests``, ``questions``, ``reference_check``, ``entry_point``, ``language``, ``evaluator``, ...)
  plus ``candidates`` (other trajectories judged alongside the output, e.g. a baseline). Each
  adapter names where its sample keeps the spec (metadata, reference outputs); the adapter's
  ``task_defaults`` apply to every sample and a sample's spec overrides them key by key (a spec
  that names ``prompt`` or ``reference`` itself wins over the sample's field).

Bad specs raise ``TaskValidationError`` naming the field before anything runs: a sample that
cannot be turned into a task is an error in the framework's own terms, never a score.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Mapping, Union

from oracle.results.result import OracleResult, Status
from oracle.tasks.task import TaskInput

if TYPE_CHECKING:
    from oracle.config.model import OracleConfig
    from oracle._oracle import Oracle

SPEC_KEY = "oracle"
"""Where a sample keeps its oracle spec (a metadata key, or a key of the reference outputs)."""
OUTPUT_ID = "output"
"""Trajectory id of the output being scored."""
PROMPT_KEYS = ("prompt", "input", "question")
OUTPUT_KEYS = ("output", "answer", "response")
REFERENCE_KEYS = ("reference", "expected", "answer", "output")
SCORED = (Status.ok, Status.escalated)
"""Statuses that carry a score; every other one is unscored in the framework's terms."""
_REASON_CHARS = 300


ConfigLike = Union["OracleConfig", str, Path, None]
"""What an adapter's ``config`` argument takes: a config object, a config file path, or None
(``OracleConfig.load()``: defaults plus ORACLE_* environment overrides)."""


def make_oracle(config: ConfigLike = None, oracle: "Oracle | None" = None) -> "Oracle":
    """The Oracle an adapter uses: the one given, else one built from ``config``."""
    from oracle.config.model import OracleConfig
    from oracle._oracle import Oracle

    if oracle is not None:
        return oracle
    if isinstance(config, OracleConfig):
        return Oracle(config)
    return Oracle(OracleConfig.load(config))


def as_text(value: Any, keys: tuple[str, ...] = PROMPT_KEYS) -> str:
    """A sample field as text: a string as is, a mapping's first known key or only value, else JSON."""
    if isinstance(value, str):
        return value
    if isinstance(value, Mapping):
        for key in keys:
            if isinstance(value.get(key), str):
                return str(value[key])
        if len(value) == 1:
            return as_text(next(iter(value.values())), keys)
    if value is None:
        return ""
    return json.dumps(value, sort_keys=True, default=str, ensure_ascii=False)


def spec_from(container: Any) -> dict[str, Any]:
    """The ``oracle`` spec held by a metadata mapping (or an object with an ``oracle`` attribute)."""
    if isinstance(container, Mapping):
        spec = container.get(SPEC_KEY)
    else:
        spec = getattr(container, SPEC_KEY, None)
    if spec is None:
        return {}
    if not isinstance(spec, Mapping):
        from oracle.errors import TaskValidationError

        raise TaskValidationError(f"{SPEC_KEY}: expected a mapping of task fields, got {type(spec).__name__}",
                                  field=SPEC_KEY)
    return dict(spec)


def build_task_input(*, task_id: str, prompt: str, output: str, reference: str | None = None,
                     spec: Mapping[str, Any] | None = None,
                     defaults: Mapping[str, Any] | None = None) -> TaskInput:
    """The task for one sample (see the module docstring); raises ``TaskValidationError``."""
    merged = {**(defaults or {}), **(spec or {})}
    extra = merged.pop("candidates", None) or []
    task: dict[str, Any] = {"id": task_id or "sample", "prompt": prompt}
    if reference is not None and reference != "":
        task["reference"] = reference
    task.update(merged)
    if not isinstance(extra, list):
        from oracle.errors import TaskValidationError

        raise TaskValidationError(f"{SPEC_KEY}.candidates: expected a list of trajectories", field="candidates")
    return TaskInput.model_validate({"task": task, "trajectories": [{"id": OUTPUT_ID, "answer": output}, *extra]})


@dataclass(frozen=True)
class Verdict:
    """The oracle's verdict on the scored output, in the terms every adapter needs."""

    status: Status
    """The output's own status when the evaluation ran (a judge may leave one candidate unparsed),
    else the evaluation's."""
    score: float | None
    passed: bool | None
    reason: str
    """One line: which evaluator, what it found, and any escalation."""
    metadata: dict[str, Any] = field(default_factory=dict)
    """route (evaluator, confidence), status, escalation (id, reason, question, blocking), error."""

    @property
    def scored(self) -> bool:
        return self.status in SCORED and self.score is not None


def verdict(result: OracleResult, candidate_id: str = OUTPUT_ID) -> Verdict:
    """Read the verdict on one candidate from an ``OracleResult``."""
    evaluation = result.result
    candidate = evaluation.candidate(candidate_id) if evaluation is not None else None
    status = result.status
    if candidate is not None and result.status in SCORED:
        status = Status.escalated if result.status is Status.escalated and candidate.status is Status.ok \
            else candidate.status
    score = candidate.score if candidate is not None and status in SCORED else None
    passed = candidate.passed if candidate is not None and status in SCORED else None
    esc = result.escalation
    metadata: dict[str, Any] = {
        "route": {"evaluator": result.route.evaluator, "confidence": result.route.confidence},
        "status": status.value,
        "escalation": None if esc is None else {"id": esc.id, "reason": esc.reason, "question": esc.question,
                                                "blocking": esc.blocking, "answer": esc.answer},
        "error": None if evaluation is None or evaluation.error is None else evaluation.error.model_dump(),
        "task_id": result.task_id,
    }
    return Verdict(status=status, score=score, passed=passed, reason=_reason(result, candidate, status),
                   metadata=metadata)


def _reason(result: OracleResult, candidate: Any, status: Status) -> str:
    evaluation = result.result
    evaluator = result.route.evaluator or "no evaluator"
    if evaluation is None:
        found = "no feasible evaluator for this task"
    elif evaluation.error is not None:
        found = f"{evaluation.error.type}: {evaluation.error.message}"
    else:
        found = _candidate_summary(candidate) or evaluation.explanation or status.value
    line = f"{evaluator} {status.value}: {found}"
    if result.escalation is not None:
        line += f"; escalation {result.escalation.reason}: {result.escalation.question}"
    line = " ".join(line.split())
    return line if len(line) <= _REASON_CHARS else line[: _REASON_CHARS - 3] + "..."


def _candidate_summary(candidate: Any) -> str | None:
    if candidate is None:
        return None
    details = candidate.details
    tests = details.get("tests")
    if isinstance(tests, list) and tests:
        passed = sum(1 for t in tests if isinstance(t, dict) and t.get("outcome") == "pass")
        line = f"passed {passed}/{len(tests)} tests"
        first_bad = next((t for t in tests if isinstance(t, dict) and t.get("outcome") != "pass"), None)
        if first_bad is not None:
            line += f"; {first_bad.get('name') or 'a test'} {first_bad.get('outcome')}: {first_bad.get('message') or ''}"
        return line.strip()
    if isinstance(details.get("message"), str):
        return str(details["message"])
    scores = criterion_scores(candidate)
    if scores:
        return "criteria " + ", ".join(f"{c.name[:40]}={_short(c.value)}" for c in scores[:6])
    if candidate.score is not None:
        return f"score {candidate.score:.3f}"
    return None


def _short(value: Any) -> str:
    return f"{value:.3g}" if isinstance(value, float) else str(value)


@dataclass(frozen=True)
class CriterionScore:
    """One rubric criterion's verdict on one candidate, the same shape for both judges."""

    id: str
    name: str
    """The criterion's text."""
    value: float | None
    """0..1: the LLM judge's normalized score or the decision judge's P(yes); None when refused."""
    met: bool | None
    status: str
    explanation: str | None


def criterion_scores(candidate: Any) -> list[CriterionScore]:
    """Per-criterion verdicts of a judged candidate (empty for the verifier).

    Read from the judges' evidence (``details["criteria"]``): the LLM judge keeps a mapping from
    criterion id to its scores and rationales, the decision judge a list of rows with P(yes). This
    is the one place that knows both shapes; a typed per-criterion field on the result would let
    it go.
    """
    criteria = candidate.details.get("criteria") if candidate is not None else None
    out: list[CriterionScore] = []
    if isinstance(criteria, dict):  # LLM judge: id -> {criterion, normalized, rationales}
        for cid, row in criteria.items():
            if not isinstance(row, dict):
                continue
            value = row.get("normalized")
            rationales = row.get("rationales") or []
            out.append(CriterionScore(id=str(cid), name=str(row.get("criterion") or cid),
                                      value=float(value) if isinstance(value, (int, float)) else None, met=None,
                                      status="ok" if isinstance(value, (int, float)) else "unscored",
                                      explanation=str(rationales[0]) if rationales else None))
    elif isinstance(criteria, list):  # decision judge: rows with criterion, probability, met
        for i, row in enumerate(criteria):
            if not isinstance(row, dict):
                continue
            p = row.get("probability")
            refused = bool(row.get("refused"))
            out.append(CriterionScore(id=str(row.get("question_id") or f"criterion{i}"),
                                      name=str(row.get("criterion") or f"criterion {i}"),
                                      value=float(p) if isinstance(p, (int, float)) else None,
                                      met=row.get("met") if isinstance(row.get("met"), bool) else None,
                                      status="abstained" if refused else ("ok" if p is not None else "unscored"),
                                      explanation=row.get("refusal_reason") or
                                      (f"P(yes) = {p:.3f}" if isinstance(p, (int, float)) else None)))
    return out


__all__ = ["OUTPUT_ID", "ConfigLike", "CriterionScore", "criterion_scores", "make_oracle", "SCORED", "SPEC_KEY", "Verdict", "as_text", "build_task_input", "spec_from", "verdict"]
