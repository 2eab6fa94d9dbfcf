"""Escalation triggers: pure checks over a route and a result that ask a human a specific question.

Each trigger names what is missing or which candidates could not be separated and on what, so a
person can answer in one line. Thresholds come from ``EscalationConfig``.
"""

from __future__ import annotations

from typing import Any

from oracle._canonical import sha256_json
from oracle.config import EscalationConfig
from oracle.result import Escalation, EvaluationResult, Status
from oracle.route import Route
from oracle.task import Task

_MISSING_FACT = {
    "verifier": "tests (or a reference answer) to run the candidates against",
    "decision_judge": "a fixed-option question (or yes/no criteria) to ask about the candidates",
    "llm_judge": "a judge model endpoint",
}


def _make(task: Task, reason: str, question: str, *, options: list[str] | None = None,
          blocking: bool, evidence: dict[str, Any]) -> Escalation:
    evidence = {"task_id": task.id, **evidence}
    ident = sha256_json({"task": task.content_hash(), "reason": reason, "evidence": evidence})[:16]
    return Escalation(id=f"esc-{ident}", reason=reason, question=question, options=options,
                      blocking=blocking, evidence=evidence)


def _uncertain_votes(route: Route) -> list[dict[str, Any]]:
    return [{"policy": v.policy, "weight": v.weight, "scores": v.scores, "reason": v.reason}
            for v in route.votes]


def check_route(task: Task, route: Route, config: EscalationConfig) -> Escalation | None:
    """Route-level triggers: no feasible evaluator; low confidence with a close runner-up."""
    if route.evaluator is None:
        forced = task.evaluator
        if forced:
            question = (f"Task {task.id!r} asks for the {forced} but it has no "
                        f"{_MISSING_FACT[forced]}. Provide that, or choose another evaluator.")
            options = [k for k in ("decision_judge", "llm_judge", "verifier")
                       if any(g.evaluator == k and g.feasible for g in route.gates)]
        else:
            question = (f"No evaluator can run on task {task.id!r}: "
                        + "; ".join(f"{g.evaluator}: {g.reason}" for g in route.gates if not g.feasible)
                        + ". Which evaluator should judge it, and with what evidence?")
            options = None
        return _make(task, "no_feasible_evaluator", question, options=options or None, blocking=True,
                     evidence={"gates": [g.model_dump() for g in route.gates], "fallback": route.fallback})
    if route.override or not route.low_confidence or route.runner_up is None:
        return None
    if route.margin is not None and route.margin > config.route_margin:
        return None
    runner_shares = {k: v for k, v in route.totals.items()}
    question = (f"The router could not tell whether task {task.id!r} needs the {route.evaluator} "
                f"or the {route.runner_up} (confidence {route.confidence:.2f}, margin "
                f"{(route.margin or 0):.2f}). Which should evaluate it?")
    return _make(task, "low_route_confidence", question,
                 options=[route.evaluator, route.runner_up], blocking=False,
                 evidence={"confidence": route.confidence, "margin": route.margin, "totals": runner_shares,
                           "votes": _uncertain_votes(route), "signals": route.signals})


def check_result(task: Task, route: Route, result: EvaluationResult,
                 config: EscalationConfig) -> Escalation | None:
    """Result-level triggers; the first that fires wins (most blocking first)."""
    if result.status == Status.failed and result.evaluator == "verifier":
        return _make(task, "verifier_infrastructure_failure",
                     f"The sandbox could not run the candidates of task {task.id!r} "
                     f"({result.error.message if result.error else 'unknown error'}). Re-run on a "
                     "machine with a working sandbox, or judge the candidates by hand?",
                     options=["rerun", "judge_by_hand"], blocking=True,
                     evidence={"error": result.error.model_dump() if result.error else None})
    scored = sorted(((c.score, c.id) for c in result.candidates if c.score is not None), reverse=True)
    if result.status == Status.ok and len(scored) >= 2:
        (top, a), (second, b) = scored[0], scored[1]
        if top - second < config.score_spread:
            return _make(task, "inseparable_candidates",
                         f"The {result.evaluator} scored candidates {a!r} and {b!r} of task {task.id!r} "
                         f"within {config.score_spread} of each other ({top:.3f} vs {second:.3f}). "
                         "Which one is better?",
                         options=[a, b], blocking=False,
                         evidence={"candidate_ids": [a, b], "scores": {a: top, b: second},
                                   "evaluator": result.evaluator})
    return None
