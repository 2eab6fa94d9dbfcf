"""Escalation triggers: pure checks over a route and a result that ask a human a specific question.

Each trigger names what is missing or which candidates could not be separated and on what, so a
person can answer in one line. Thresholds come from ``EscalationConfig``. The facts are read from
the route and from ``EvaluationResult.details`` / ``provenance`` as the evaluators write them
(decision judge: ``refused``, ``abstained``, ``low_confidence``, ``order_flip``; LLM judge:
``order_inconsistent_pairs``, ``cycles``; verifier: ``provenance["isolation_level"]``), so this
module never calls a model and gives the same request for the same inputs.

Request ids are a hash of the task content, the reason and the evidence: re-running the same
evaluation (a resumed batch, say) finds the request it stored before instead of filing a second.
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

from oracle._canonical import sha256_json
from oracle.config import EscalationConfig
from oracle.result import Escalation, EvaluationResult, Status
from oracle.route import Route
from oracle.task import Task

EscalationRequest = Escalation
"""The issue's name for a request; one model serves both."""

ISOLATION_ORDER = ("none", "rlimits", "landlock", "namespaces")
"""Weakest to strongest sandbox isolation."""

REASONS = ("no_feasible_evaluator", "low_route_confidence", "verifier_infrastructure_failure",
           "verifier_task_unrunnable",
           "isolation_below_required", "decision_refusal", "decision_abstention",
           "pairwise_order_inconsistent", "preference_cycle", "decision_order_flip",
           "decision_low_confidence", "inseparable_candidates")
"""Every reason code, most blocking first (the order ``check_result`` tries them in)."""

_MISSING_FACT = {
    "verifier": "tests (or a reference answer) to run the candidates against",
    "decision_judge": "a fixed-option question (or yes/no criteria) to ask about the candidates",
    "llm_judge": "a judge model endpoint",
}


def _make(task: Task, reason: str, question: str, *, options: list[str] | None = None,
          blocking: bool, evidence: dict[str, Any]) -> Escalation:
    evidence = {"task_id": task.id, **evidence}
    ident = sha256_json({"task": task.content_hash(), "reason": reason, "evidence": evidence})[:16]
    return Escalation(id=f"esc-{ident}", reason=reason, question=question, options=options or None,
                      blocking=blocking, evidence=evidence)


def _uncertain_votes(route: Route) -> list[dict[str, Any]]:
    return [{"policy": v.policy, "weight": v.weight, "scores": v.scores, "reason": v.reason}
            for v in route.votes]


def _join(items: Sequence[str]) -> str:
    items = [repr(i) for i in items]
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


def check_route(task: Task, route: Route, config: EscalationConfig) -> Escalation | None:
    """Route-level triggers: no feasible evaluator; low confidence with a close runner-up."""
    if route.evaluator is None:
        forced = task.evaluator
        feasible = [g.evaluator for g in route.gates if g.feasible]
        if forced:
            question = (f"Task {task.id!r} asks for the {forced} but it has no "
                        f"{_MISSING_FACT[forced]}. Provide that, or choose another evaluator.")
            options = feasible
        else:
            question = (f"No evaluator can run on task {task.id!r}: "
                        + "; ".join(f"{g.evaluator}: {g.reason}" for g in route.gates if not g.feasible)
                        + ". Which evaluator should judge it, and with what evidence?")
            options = None
        return _make(task, "no_feasible_evaluator", question, options=options, blocking=True,
                     evidence={"gates": [g.model_dump() for g in route.gates], "fallback": route.fallback})
    if route.override or not route.low_confidence or route.runner_up is None:
        return None
    if route.margin is not None and route.margin > config.route_margin:
        return None
    question = (f"The router could not tell whether task {task.id!r} needs the {route.evaluator} "
                f"or the {route.runner_up} (confidence {route.confidence:.2f}, margin "
                f"{(route.margin or 0):.2f}). Which should evaluate it?")
    return _make(task, "low_route_confidence", question,
                 options=[route.evaluator, route.runner_up], blocking=False,
                 evidence={"confidence": route.confidence, "margin": route.margin, "totals": dict(route.totals),
                           "votes": _uncertain_votes(route), "signals": route.signals})


# ---- result-level triggers -------------------------------------------------------------------------
# Each takes (task, result, config, candidate_ids) and returns a request or None.

_TASK_PROBLEMS = ("TaskValidationError", "UnsupportedLanguage")


def _verifier_failure(task: Task, result: EvaluationResult, config: EscalationConfig,
                      ids: list[str]) -> Escalation | None:
    if result.status != Status.failed or result.evaluator != "verifier":
        return None
    message = result.error.message if result.error else "unknown error"
    if result.error is not None and result.error.type in _TASK_PROBLEMS:
        # not the sandbox's fault: the task lacks something the verifier needs
        return _make(task, "verifier_task_unrunnable",
                     f"The verifier cannot run task {task.id!r}: {message}. Supply that, or choose "
                     "another evaluator?",
                     options=["decision_judge", "llm_judge"], blocking=True,
                     evidence={"error": result.error.model_dump(), "candidate_ids": ids})
    return _make(task, "verifier_infrastructure_failure",
                 f"The sandbox could not run the candidates of task {task.id!r} ({message}). "
                 "Re-run on a machine with a working sandbox ('rerun'), or name the candidate "
                 "that is correct?",
                 options=["rerun", *ids], blocking=True,
                 evidence={"error": result.error.model_dump() if result.error else None, "candidate_ids": ids})


def isolation_level(result: EvaluationResult) -> str | None:
    """The isolation level the verifier recorded (top level or under ``sandbox``)."""
    prov = result.provenance
    level = prov.get("isolation_level")
    if level is None and isinstance(prov.get("sandbox"), dict):
        level = prov["sandbox"].get("isolation_level")
    return level


def _weak_isolation(task: Task, result: EvaluationResult, config: EscalationConfig,
                    ids: list[str]) -> Escalation | None:
    if result.evaluator != "verifier" or result.status == Status.failed:
        return None
    if result.provenance.get("integrity") == "in_process":
        return _make(task, "isolation_below_required",
                     f"The tests of task {task.id!r} ran inside each candidate's own process "
                     "(execution: in_process), where a candidate can forge its verdict. Accept this "
                     "verdict ('accept') or re-run the tests isolated ('rerun')?",
                     options=["accept", "rerun"], blocking=True,
                     evidence={"integrity": "in_process", "isolation_level": isolation_level(result),
                               "candidate_ids": ids, "scores": _scores(result)})
    level = isolation_level(result)
    if level is None:
        return None
    rank = ISOLATION_ORDER.index(level) if level in ISOLATION_ORDER else -1
    if rank >= ISOLATION_ORDER.index(config.required_isolation):
        return None
    return _make(task, "isolation_below_required",
                 f"The candidates of task {task.id!r} ran under {level!r} isolation, below the "
                 f"required {config.required_isolation!r}. Accept this verdict ('accept') or re-run "
                 "under stronger isolation ('rerun')?",
                 options=["accept", "rerun"], blocking=True,
                 evidence={"isolation_level": level, "required": config.required_isolation,
                           "candidate_ids": ids, "scores": _scores(result)})


def _scores(result: EvaluationResult) -> dict[str, float | None]:
    return {c.id: c.score for c in result.candidates}


def _flagged(result: EvaluationResult, key: str) -> list[str]:
    return [c.id for c in result.candidates if c.details.get(key)]


def _questions_of(result: EvaluationResult, cid: str, key: str) -> list[str]:
    cand = result.candidate(cid)
    return list(cand.details.get(key) or []) if cand else []


def _verdict_options(ids: list[str]) -> list[str]:
    """One candidate: pass/fail; several: which one is best."""
    return ["pass", "fail"] if len(ids) == 1 else list(ids)


def _decision_refusal(task: Task, result: EvaluationResult, config: EscalationConfig,
                      ids: list[str]) -> Escalation | None:
    if result.evaluator != "decision_judge" or not result.details.get("refused"):
        return None
    refused = _flagged(result, "refused") or ids
    questions = {cid: _questions_of(result, cid, "refused_questions") for cid in refused}
    reasons = {cid: (result.candidate(cid).details.get("refusal_reasons") if result.candidate(cid) else None)
               for cid in refused}
    extra_reasons = result.details.get("refusals")
    on_what = "; ".join(f"{cid}: {', '.join(qs)}" for cid, qs in questions.items() if qs) or "the comparison"
    why = extra_reasons or [r for v in reasons.values() if v for r in v.values()]
    ask = (f"Does candidate {refused[0]!r} satisfy the task?" if len(ids) == 1
           else f"Which of {_join(ids)} is best?")
    return _make(task, "decision_refusal",
                 f"The decision model refused to answer for task {task.id!r} ({on_what}"
                 f"{'; reason: ' + '; '.join(map(str, why)) if why else ''}). {ask}",
                 options=_verdict_options(ids), blocking=not any(c.score is not None for c in result.candidates),
                 evidence={"candidate_ids": refused, "refused_questions": questions,
                           "refusal_reasons": why, "scores": _scores(result)})


def _decision_abstention(task: Task, result: EvaluationResult, config: EscalationConfig,
                         ids: list[str]) -> Escalation | None:
    if result.evaluator != "decision_judge":
        return None
    if not (result.details.get("abstained") or result.status == Status.abstained):
        return None
    abstained = _flagged(result, "abstained") or [c.id for c in result.candidates if c.status == Status.abstained]
    questions = {cid: _questions_of(result, cid, "abstained_questions") for cid in abstained}
    on_what = "; ".join(f"{cid} on {', '.join(qs)}" for cid, qs in questions.items() if qs) or _join(abstained)
    ask = (f"Does candidate {abstained[0]!r} satisfy the task?" if len(ids) == 1
           else f"Which of {_join(ids)} is best?")
    return _make(task, "decision_abstention",
                 f"The decision model chose to abstain for task {task.id!r} ({on_what}). {ask}",
                 options=_verdict_options(ids), blocking=result.status == Status.abstained,
                 evidence={"candidate_ids": abstained, "abstained_questions": questions,
                           "scores": _scores(result)})


def _pairs(value: Any) -> list[tuple[str, str]]:
    """Read pairs written as [a, b], (a, b) or {"a": .., "b": ..}."""
    out = []
    for item in value or []:
        if isinstance(item, dict) and "a" in item and "b" in item:
            out.append((str(item["a"]), str(item["b"])))
        elif isinstance(item, (list, tuple)) and len(item) >= 2:
            out.append((str(item[0]), str(item[1])))
    return out


def _order_inconsistent(task: Task, result: EvaluationResult, config: EscalationConfig,
                        ids: list[str]) -> Escalation | None:
    pairs = _pairs(result.details.get("order_inconsistent_pairs"))
    if not pairs:
        return None
    a, b = pairs[0]
    on = result.details.get("criterion") or "the rubric"
    more = f" ({len(pairs) - 1} more pair(s) flipped too)" if len(pairs) > 1 else ""
    return _make(task, "pairwise_order_inconsistent",
                 f"The {result.evaluator} preferred {a!r} over {b!r} in one order and {b!r} over {a!r} "
                 f"with the seats swapped, judging task {task.id!r} on {on}{more}. Which is better: "
                 f"{a!r} or {b!r}?",
                 options=[a, b], blocking=False,
                 evidence={"candidate_ids": [a, b], "pairs": [list(p) for p in pairs],
                           "scores": _scores(result), "evaluator": result.evaluator})


def _cycle(task: Task, result: EvaluationResult, config: EscalationConfig,
           ids: list[str]) -> Escalation | None:
    cycles = [list(map(str, c)) for c in (result.details.get("cycles") or []) if c]
    if not cycles:
        return None
    cycle = cycles[0]
    loop = " > ".join([*cycle, cycle[0]])
    return _make(task, "preference_cycle",
                 f"The {result.evaluator}'s pairwise verdicts on task {task.id!r} form a cycle "
                 f"({loop}), so no best candidate follows from them. Which of {_join(cycle)} is best?",
                 options=cycle, blocking=False,
                 evidence={"candidate_ids": cycle, "cycles": cycles, "scores": _scores(result),
                           "evaluator": result.evaluator})


def _decision_order_flip(task: Task, result: EvaluationResult, config: EscalationConfig,
                         ids: list[str]) -> Escalation | None:
    if result.evaluator != "decision_judge" or not result.details.get("order_flip"):
        return None
    winners = [w for w in (result.details.get("winners_by_order") or []) if w]
    pair = list(dict.fromkeys(winners))[:2] if len(set(winners)) >= 2 else ids[:2]
    return _make(task, "decision_order_flip",
                 f"Asked which candidate of task {task.id!r} is best, the decision model picked "
                 f"{pair[0]!r} in the given order and {pair[-1]!r} with the order reversed. "
                 f"Which is better: {pair[0]!r} or {pair[-1]!r}?",
                 options=pair, blocking=False,
                 evidence={"candidate_ids": pair, "winners_by_order": winners,
                           "probabilities": result.details.get("probabilities"), "scores": _scores(result)})


def _decision_low_confidence(task: Task, result: EvaluationResult, config: EscalationConfig,
                             ids: list[str]) -> Escalation | None:
    if result.evaluator != "decision_judge" or not result.details.get("low_confidence"):
        return None
    low = list(result.details.get("low_confidence_candidates") or _flagged(result, "low_confidence"))
    if not low:
        return None
    cid = low[0]
    questions = _questions_of(result, cid, "low_confidence_questions")
    cand = result.candidate(cid)
    confidence = None
    for q in (cand.details.get("questions") or []) if cand else []:
        if isinstance(q, dict) and q.get("question_id") in questions:
            confidence = q.get("confidence")
            break
    what = f"question(s) {', '.join(questions)}" if questions else "its verdict"
    conf = f" (confidence {confidence:.2f})" if isinstance(confidence, (int, float)) else ""
    ask = f"Does candidate {cid!r} satisfy the task?" if len(ids) == 1 else f"Which of {_join(ids)} is best?"
    return _make(task, "decision_low_confidence",
                 f"The decision model was unsure about candidate {cid!r} of task {task.id!r} on "
                 f"{what}{conf}. {ask}",
                 options=_verdict_options(ids), blocking=False,
                 evidence={"candidate_ids": low, "low_confidence_questions": questions,
                           "confidence": confidence, "scores": _scores(result)})


def _inseparable(task: Task, result: EvaluationResult, config: EscalationConfig,
                 ids: list[str]) -> Escalation | None:
    scored = sorted(((c.score, c.id) for c in result.candidates if c.score is not None),
                    key=lambda sc: (-sc[0], sc[1]))
    if result.status != Status.ok or len(scored) < 2:
        return None
    (top, a), (second, b) = scored[0], scored[1]
    if top - second >= config.score_spread:
        return None
    if result.evaluator == "verifier" and all(
            (c := result.candidate(i)) is not None and c.passed is True for i in (a, b)):
        return None  # both pass every test: verified correct, a tie the result already reports
    if result.evaluator == "verifier" and result.details.get("none_passed"):
        firsts = {i: (result.candidate(i).details.get("first_failure") or result.candidate(i).details.get("message")
                      or "failed") for i in (a, b)}
        return _make(task, "inseparable_candidates",
                     f"No candidate of task {task.id!r} passed the verifier's "
                     f"{'tests' if result.details.get('mode') == 'tests' else 'reference check'}; the closest, "
                     f"{a!r} ({top:.3f}) and {b!r} ({second:.3f}), failed first at: "
                     + "; ".join(f"{i}: {m}" for i, m in firsts.items())
                     + ". Is one of them acceptable anyway, or none?",
                     options=[a, b, "none"], blocking=False,
                     evidence={"candidate_ids": [a, b], "scores": {a: top, b: second}, "none_passed": True,
                               "first_failures": firsts, "evaluator": result.evaluator})
    basis = result.details.get("mode") or result.details.get("criterion") or "its scores"
    return _make(task, "inseparable_candidates",
                 f"The {result.evaluator} scored candidates {a!r} and {b!r} of task {task.id!r} "
                 f"within {config.score_spread} of each other ({top:.3f} vs {second:.3f}, judged on "
                 f"{basis}). Which one is better?",
                 options=[a, b], blocking=False,
                 evidence={"candidate_ids": [a, b], "scores": {a: top, b: second},
                           "evaluator": result.evaluator})


RESULT_TRIGGERS: tuple[Callable[[Task, EvaluationResult, EscalationConfig, list[str]], Escalation | None], ...] = (
    _verifier_failure, _weak_isolation, _decision_refusal, _decision_abstention, _order_inconsistent,
    _cycle, _decision_order_flip, _decision_low_confidence, _inseparable)


def result_triggers(task: Task, route: Route, result: EvaluationResult, config: EscalationConfig,
                    candidate_ids: Sequence[str] = ()) -> list[Escalation]:
    """Every result-level request that fires, most blocking first."""
    ids = list(candidate_ids) or [c.id for c in result.candidates]
    return [esc for trig in RESULT_TRIGGERS if (esc := trig(task, result, config, ids)) is not None]


def check_result(task: Task, route: Route, result: EvaluationResult, config: EscalationConfig,
                 candidate_ids: Sequence[str] = ()) -> Escalation | None:
    """The first result-level request that fires; the others are listed in its evidence."""
    found = result_triggers(task, route, result, config, candidate_ids)
    if not found:
        return None
    first = found[0]
    if len(found) > 1:
        first.evidence["also"] = [e.reason for e in found[1:]]
    return first
