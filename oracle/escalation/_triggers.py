"""Escalation triggers: pure checks over a route and a result that ask a human a specific question.

Each trigger names what is missing or which candidates could not be separated and on what, so a
person can answer in one line. Thresholds come from ``EscalationConfig``. The facts come from the
route and from the result's typed parts only: its ``concerns`` (oracle/results/concerns.py: one class per
thing an evaluator can notice), status, error, scores and typed provenance. An evaluator's free-form
``details`` are never read here, so renaming a detail cannot silence an escalation. This module
never calls a model and gives the same request for the same inputs.

Request ids are a hash of the task content, the reason and the evidence: re-running the same
evaluation (a resumed batch, say) finds the request it stored before instead of filing a second.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Callable, Sequence, TypeVar

from oracle._internal.canonical import sha256_json
from oracle.results.concerns import (
    BrokenTests,
    ClaimUndecided,
    DecisionAbstention,
    DecisionLowConfidence,
    DecisionOrderFlip,
    DecisionRefusal,
    NoCandidatePassed,
    OrderInconsistent,
    PanelDisagreement,
    PreferenceCycle,
    SandboxFailure,
    TaskUnrunnable,
    WeakIsolation,
    verifier_failure,
)
from oracle.config.model import EscalationConfig
from oracle.results.provenance import ISOLATION_ORDER
from oracle.results.result import Escalation, EvaluationResult, Status
from oracle.routing.route import Route
from oracle.tasks.task import Task

EscalationRequest = Escalation
"""The issue's name for a request; one model serves both."""

REASONS = ("no_feasible_evaluator", "low_route_confidence", "verifier_infrastructure_failure",
           "verifier_task_unrunnable", "broken_tests",
           "isolation_below_required", "decision_refusal", "claim_check_undecided", "decision_abstention",
           "pairwise_order_inconsistent", "preference_cycle", "panel_disagreement", "decision_order_flip",
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
                     evidence={"gates": [dataclasses.asdict(g) for g in route.gates], "fallback": route.fallback})
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
# Each takes (task, result, config, candidate_ids) and returns a request or None. They read the
# evaluator's typed concerns and typed fields (status, error, scores, provenance.mode), never its
# ``details``.

C = TypeVar("C")


def _concern(result: EvaluationResult, kind: type[C]) -> C | None:
    return next((c for c in result.concerns if isinstance(c, kind)), None)


def _failure_concern(result: EvaluationResult, ids: list[str]) -> SandboxFailure | TaskUnrunnable | None:
    """The verifier's failure concern; for a failed verifier result the Oracle built itself (the
    evaluator could not be constructed, or raised), the same concern derived from its error."""
    found = _concern(result, SandboxFailure) or _concern(result, TaskUnrunnable)
    if found is None and _concern(result, BrokenTests) is not None:
        return None  # the task's tests are broken: _broken_tests asks about that
    if found is None and result.status == Status.failed and result.evaluator == "verifier":
        error = result.error
        found = verifier_failure(error.type if error else "EvaluationFailed",
                                 error.message if error else "unknown error", ids)
    return found


def _verifier_failure(task: Task, result: EvaluationResult, config: EscalationConfig,
                      ids: list[str]) -> Escalation | None:
    concern = _failure_concern(result, ids)
    if concern is None:
        return None
    error = concern.evidence.model_dump()
    message = concern.evidence.message
    if isinstance(concern, TaskUnrunnable):
        # not the sandbox's fault: the task lacks something the verifier needs
        return _make(task, "verifier_task_unrunnable",
                     f"The verifier cannot run task {task.id!r}: {message}. Supply that, or choose "
                     "another evaluator?",
                     options=["decision_judge", "llm_judge"], blocking=True,
                     evidence={"error": error, "candidate_ids": ids})
    return _make(task, "verifier_infrastructure_failure",
                 f"The sandbox could not run the candidates of task {task.id!r} ({message}). "
                 "Re-run on a machine with a working sandbox ('rerun'), or name the candidate "
                 "that is correct?",
                 options=["rerun", *ids], blocking=True,
                 evidence={"error": error, "candidate_ids": ids})


def _broken_tests(task: Task, result: EvaluationResult, config: EscalationConfig,
                  ids: list[str]) -> Escalation | None:
    """Tests that are the task's fault: blocking when no test was left to score anyone on."""
    concern = _concern(result, BrokenTests)
    if concern is None:
        return None
    tests = concern.evidence.tests
    listed = "; ".join(f"{name}: {why}" for name, why in list(tests.items())[:5]) + \
        (f"; and {len(tests) - 5} more" if len(tests) > 5 else "")
    if result.status == Status.failed:
        return _make(task, "broken_tests",
                     f"Every test of task {task.id!r} is broken, the task's fault rather than the candidates' "
                     f"({listed}), so no candidate has a verdict. Fix the tests and re-run ('rerun'), or name "
                     "the candidate that is correct?",
                     options=["rerun", *ids], blocking=True,
                     evidence={"broken_tests": dict(tests), "scored_tests": 0, "candidate_ids": ids})
    return _make(task, "broken_tests",
                 f"{len(tests)} test(s) of task {task.id!r} are broken, the task's fault rather than the "
                 f"candidates' ({listed}); the candidates were scored on the {concern.evidence.scored} that ran. "
                 "Accept the verdict on those ('accept'), or fix the tests and re-run ('rerun')?",
                 options=["accept", "rerun"], blocking=False,
                 evidence={"broken_tests": dict(tests), "scored_tests": concern.evidence.scored,
                           "candidate_ids": ids, "scores": _scores(result)})


def isolation_level(result: EvaluationResult) -> str | None:
    """The isolation level the verifier recorded (None when no code ran)."""
    return result.provenance.isolation_level


def _weak_isolation(task: Task, result: EvaluationResult, config: EscalationConfig,
                    ids: list[str]) -> Escalation | None:
    concern = _concern(result, WeakIsolation)
    if concern is None or result.status == Status.failed:
        return None
    level = concern.evidence.isolation_level
    if concern.evidence.integrity == "in_process":
        return _make(task, "isolation_below_required",
                     f"The tests of task {task.id!r} ran inside each candidate's own process "
                     "(execution: in_process), where a candidate can forge its verdict. Accept this "
                     "verdict ('accept') or re-run the tests isolated ('rerun')?",
                     options=["accept", "rerun"], blocking=True,
                     evidence={"integrity": "in_process", "isolation_level": level,
                               "candidate_ids": ids, "scores": _scores(result)})
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


def _verdict_options(ids: list[str]) -> list[str]:
    """One candidate: pass/fail; several: which one is best."""
    return ["pass", "fail"] if len(ids) == 1 else list(ids)


def _decision_refusal(task: Task, result: EvaluationResult, config: EscalationConfig,
                      ids: list[str]) -> Escalation | None:
    concern = _concern(result, DecisionRefusal)
    if concern is None:
        return None
    refused = concern.candidates or ids
    questions = {cid: concern.evidence.questions.get(cid, []) for cid in refused}
    why = concern.evidence.reasons
    on_what = "; ".join(f"{cid}: {', '.join(qs)}" for cid, qs in questions.items() if qs) or "the comparison"
    ask = (f"Does candidate {refused[0]!r} satisfy the task?" if len(ids) == 1
           else f"Which of {_join(ids)} is best?")
    return _make(task, "decision_refusal",
                 f"The decision model refused to answer for task {task.id!r} ({on_what}"
                 f"{'; reason: ' + '; '.join(why) if why else ''}). {ask}",
                 options=_verdict_options(ids), blocking=not any(c.score is not None for c in result.candidates),
                 evidence={"candidate_ids": refused, "refused_questions": questions,
                           "refusal_reasons": why, "scores": _scores(result)})


def _claim_undecided(task: Task, result: EvaluationResult, config: EscalationConfig,
                     ids: list[str]) -> Escalation | None:
    concern = _concern(result, ClaimUndecided)
    if concern is None:
        return None
    ev = concern.evidence
    cid = (concern.candidates or ids)[0]
    why = {"disagreement": "the two answers disagree", "weak_support": "the first answer is not decisive",
           "weak_challenge": "the second answer is not decisive", "weak_both": "neither answer is decisive"}
    support, challenge = (("refused" if p is None else f"{p:.2f}") for p in (ev.support, ev.challenge))
    return _make(task, "claim_check_undecided",
                 f"The claim check of candidate {cid!r} on task {task.id!r} has no verdict: "
                 f"P(the claim is supported by the evidence) = {support} (decides at "
                 f"{ev.support_threshold:g}), P(there is strong evidence that the claim is wrong) = "
                 f"{challenge} (decides at {ev.challenge_threshold:g}); {why[ev.reason]}. Is the claim "
                 "supported by the evidence ('pass') or not ('fail')?",
                 options=["pass", "fail"], blocking=result.status == Status.abstained,
                 evidence={"candidate_ids": [cid], **ev.model_dump()})


def _decision_abstention(task: Task, result: EvaluationResult, config: EscalationConfig,
                         ids: list[str]) -> Escalation | None:
    concern = _concern(result, DecisionAbstention)
    if concern is None:
        return None
    abstained = concern.candidates
    questions = {cid: concern.evidence.questions.get(cid, []) for cid in abstained}
    on_what = "; ".join(f"{cid} on {', '.join(qs)}" for cid, qs in questions.items() if qs) or _join(abstained)
    ask = (f"Does candidate {abstained[0]!r} satisfy the task?" if len(ids) == 1
           else f"Which of {_join(ids)} is best?")
    return _make(task, "decision_abstention",
                 f"The decision model chose to abstain for task {task.id!r} ({on_what}). {ask}",
                 options=_verdict_options(ids), blocking=result.status == Status.abstained,
                 evidence={"candidate_ids": abstained, "abstained_questions": questions,
                           "scores": _scores(result)})


def _order_inconsistent(task: Task, result: EvaluationResult, config: EscalationConfig,
                        ids: list[str]) -> Escalation | None:
    concern = _concern(result, OrderInconsistent)
    pairs = concern.evidence.pairs if concern else []
    if not pairs:
        return None
    a, b = pairs[0]
    on = concern.evidence.basis or "the rubric"  # type: ignore[union-attr]
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
    concern = _concern(result, PreferenceCycle)
    cycles = [c for c in concern.evidence.cycles if c] if concern else []
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


def _panel_disagreement(task: Task, result: EvaluationResult, config: EscalationConfig,
                        ids: list[str]) -> Escalation | None:
    """The judges of a panel split: the verdict is their aggregate, a person says whether it stands."""
    concern = _concern(result, PanelDisagreement)
    if concern is None:
        return None
    ev = concern.evidence
    ask = (f"Does candidate {ids[0]!r} satisfy the task?" if len(ids) == 1 else f"Which of {_join(ids)} is best?")
    return _make(task, "panel_disagreement",
                 f"The {result.evaluator}'s panel ({', '.join(ev.members)}) split judging task {task.id!r}: "
                 f"{concern.message.removeprefix('the judge panel split: ')}. {ask}",
                 options=_verdict_options(ids), blocking=False,
                 evidence={"candidate_ids": concern.candidates, "members": ev.members, "threshold": ev.threshold,
                           "spreads": ev.spreads, "pairs": [list(p) for p in ev.pairs], "winners": ev.winners,
                           "scores": _scores(result), "evaluator": result.evaluator})


def _decision_order_flip(task: Task, result: EvaluationResult, config: EscalationConfig,
                         ids: list[str]) -> Escalation | None:
    concern = _concern(result, DecisionOrderFlip)
    if concern is None:
        return None
    pair = concern.candidates[:2] if len(concern.candidates) >= 2 else ids[:2]
    return _make(task, "decision_order_flip",
                 f"Asked which candidate of task {task.id!r} is best, the decision model picked "
                 f"{pair[0]!r} in the given order and {pair[-1]!r} with the order reversed. "
                 f"Which is better: {pair[0]!r} or {pair[-1]!r}?",
                 options=pair, blocking=False,
                 evidence={"candidate_ids": pair, "winners_by_order": concern.evidence.winners_by_order,
                           "probabilities": concern.evidence.probabilities, "scores": _scores(result)})


def _decision_low_confidence(task: Task, result: EvaluationResult, config: EscalationConfig,
                             ids: list[str]) -> Escalation | None:
    concern = _concern(result, DecisionLowConfidence)
    if concern is None or not concern.candidates:
        return None
    low = concern.candidates
    cid = low[0]
    questions = concern.evidence.questions.get(cid, [])
    confidence = concern.evidence.confidence.get(cid)
    what = f"question(s) {', '.join(questions)}" if questions else "its verdict"
    conf = f" (confidence {confidence:.2f})" if isinstance(confidence, (int, float)) else ""
    ask = f"Does candidate {cid!r} satisfy the task?" if len(ids) == 1 else f"Which of {_join(ids)} is best?"
    return _make(task, "decision_low_confidence",
                 f"The decision model was unsure about candidate {cid!r} of task {task.id!r} on "
                 f"{what}{conf}. {ask}",
                 options=_verdict_options(ids), blocking=False,
                 evidence={"candidate_ids": low, "low_confidence_questions": questions,
                           "confidence": confidence, "scores": _scores(result)})


_FAILED_ON = {"tests": "tests", "reference": "reference check", "criteria": "criteria", "questions": "questions"}


def _inseparable(task: Task, result: EvaluationResult, config: EscalationConfig,
                 ids: list[str]) -> Escalation | None:
    candidates = result.candidates
    if result.evaluator == "decision_judge" and any(c.passed for c in candidates):
        candidates = [c for c in candidates if c.passed]  # the pass rule already separates the others
    scored = sorted(((c.score, c.id) for c in candidates if c.score is not None),
                    key=lambda sc: (-sc[0], sc[1]))
    if result.status != Status.ok or len(scored) < 2:
        return None
    (top, a), (second, b) = scored[0], scored[1]
    if top - second >= config.score_spread:
        return None
    if result.evaluator == "verifier" and all(
            (c := result.candidate(i)) is not None and c.passed is True for i in (a, b)):
        return None  # both pass every test: verified correct, a tie the result already reports
    none_passed = _concern(result, NoCandidatePassed)
    if none_passed is not None:
        firsts = {i: none_passed.evidence.first_failures.get(i, "failed") for i in (a, b)}
        return _make(task, "inseparable_candidates",
                     f"No candidate of task {task.id!r} passed the {result.evaluator}'s "
                     f"{_FAILED_ON[none_passed.evidence.mode]}; the closest, "
                     f"{a!r} ({top:.3f}) and {b!r} ({second:.3f}), failed first at: "
                     + "; ".join(f"{i}: {m}" for i, m in firsts.items())
                     + ". Is one of them acceptable anyway, or none?",
                     options=[a, b, "none"], blocking=False,
                     evidence={"candidate_ids": [a, b], "scores": {a: top, b: second}, "none_passed": True,
                               "first_failures": firsts, "evaluator": result.evaluator})
    basis = result.provenance.mode or "its scores"
    return _make(task, "inseparable_candidates",
                 f"The {result.evaluator} scored candidates {a!r} and {b!r} of task {task.id!r} "
                 f"within {config.score_spread} of each other ({top:.3f} vs {second:.3f}, judged on "
                 f"{basis}). Which one is better?",
                 options=[a, b], blocking=False,
                 evidence={"candidate_ids": [a, b], "scores": {a: top, b: second},
                           "evaluator": result.evaluator})


RESULT_TRIGGERS: tuple[Callable[[Task, EvaluationResult, EscalationConfig, list[str]], Escalation | None], ...] = (
    _verifier_failure, _broken_tests, _weak_isolation, _decision_refusal, _claim_undecided, _decision_abstention,
    _order_inconsistent, _cycle, _panel_disagreement, _decision_order_flip, _decision_low_confidence, _inseparable)


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
