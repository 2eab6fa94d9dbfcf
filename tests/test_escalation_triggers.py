"""Each escalation trigger produces its request with a specific question (names, facts, options).

The results here are built by hand from typed concerns, to pin each request's text, options,
blocking flag and id; tests/test_escalation_end_to_end.py drives every trigger through the real
evaluators (sandboxed code, the scripted model server over HTTP)."""

from __future__ import annotations

import dataclasses

import pytest

from oracle.results import concerns as cn
from oracle.config.model import EscalationConfig, OracleConfig
from oracle.escalation._triggers import REASONS, check_result, check_route, result_triggers
from oracle._oracle import Oracle
from oracle.results.provenance import EvaluationProvenance, Execution
from oracle.results.result import CandidateResult, EvaluationResult, Status
from oracle.tasks.task import TaskInput
from tests.data.tasks import code_task, open_task, question_task

CFG = EscalationConfig()


def _item(data) -> TaskInput:
    return TaskInput.model_validate(data)


def _route(item: TaskInput):
    return Oracle(OracleConfig()).route(item)


def test_no_feasible_evaluator_names_the_missing_fact_and_feasible_options():
    item = _item(open_task(id="forced", evaluator="verifier"))
    esc = check_route(item.task, _route(item), CFG)
    assert esc is not None and esc.reason == "no_feasible_evaluator" and esc.blocking
    assert "'forced'" in esc.question and "tests (or a reference answer)" in esc.question
    assert esc.options and "verifier" not in esc.options and "llm_judge" in esc.options


def test_low_route_confidence_names_both_evaluators():
    item = _item(open_task(id="unsure"))
    route = dataclasses.replace(_route(item), low_confidence=True, runner_up="decision_judge", margin=0.05,
                                confidence=0.4, override=False)
    esc = check_route(item.task, route, CFG)
    assert esc is not None and esc.reason == "low_route_confidence" and not esc.blocking
    assert route.evaluator in esc.question and "decision_judge" in esc.question and "0.05" in esc.question
    assert esc.options == [route.evaluator, "decision_judge"]
    assert "votes" in esc.evidence and "signals" in esc.evidence
    wide = dataclasses.replace(route, margin=0.5)
    assert check_route(item.task, wide, CFG) is None


def test_verifier_failure_offers_rerun_or_a_candidate():
    item = _item(code_task(id="boom"))
    res = EvaluationResult.failure("verifier", "bubblewrap: setting up uid map: Permission denied",
                                   error_type="SandboxError")
    esc = check_result(item.task, _route(item), res, CFG, ["good", "bad"])
    assert esc.reason == "verifier_infrastructure_failure" and esc.blocking
    assert "Permission denied" in esc.question and esc.options == ["rerun", "good", "bad"]


def test_verifier_task_problem_names_the_missing_field_and_offers_judges():
    item = _item(code_task(id="noentry"))
    res = EvaluationResult.failure("verifier", "task.entry_point: required by check(candidate) tests",
                                   error_type="TaskValidationError")
    esc = check_result(item.task, _route(item), res, CFG, ["good", "bad"])
    assert esc.reason == "verifier_task_unrunnable" and esc.blocking
    assert "task.entry_point" in esc.question and esc.options == ["decision_judge", "llm_judge"]


@pytest.mark.parametrize("level,fires", [("rlimits", True), ("landlock", True), ("namespaces", False)])
def test_isolation_below_required(level, fires):
    item = _item(code_task(id="weak"))
    res = EvaluationResult(evaluator="verifier", status=Status.ok, best=["good"],
                           candidates=[CandidateResult(id="good", score=1.0, passed=True),
                                       CandidateResult(id="bad", score=0.0, passed=False)],
                           provenance=EvaluationProvenance(execution=Execution(
                               code_run=True, integrity="isolated", isolation_level=level)),
                           concerns=[cn.WeakIsolation(candidates=["good", "bad"], message="weak",
                                                      evidence=cn.IsolationEvidence(integrity="isolated",
                                                                                    isolation_level=level))]
                           if level != "namespaces" else [])
    esc = check_result(item.task, _route(item), res, CFG)
    if not fires:
        assert esc is None
        return
    assert esc.reason == "isolation_below_required" and esc.blocking
    assert repr(level) in esc.question and "'namespaces'" in esc.question and esc.options == ["accept", "rerun"]
    relaxed = EscalationConfig(required_isolation="rlimits")
    assert check_result(item.task, _route(item), res, relaxed) is None


def _decision(candidates, *concerns) -> EvaluationResult:
    status = Status.ok if any(c.status == Status.ok for c in candidates) else Status.abstained
    return EvaluationResult(evaluator="decision_judge", status=status, candidates=candidates,
                            concerns=list(concerns))


def test_decision_refusal_names_question_and_reason():
    item = _item(question_task(id="refuse"))
    cand = CandidateResult(id="r1", status=Status.abstained)
    refusal = cn.DecisionRefusal(candidates=["r1"], message="refused", evidence=cn.RefusalEvidence(
        questions={"r1": ["team"]}, reasons=["policy: customer data"]))
    esc = check_result(item.task, _route(item), _decision([cand], refusal), CFG)
    assert esc.reason == "decision_refusal" and esc.blocking
    assert "r1: team" in esc.question and "policy: customer data" in esc.question
    assert esc.options == ["pass", "fail"]


def test_decision_abstention_is_blocking_when_nothing_was_scored():
    item = _item(question_task(id="abst"))
    cand = CandidateResult(id="r1", status=Status.abstained)
    abstained = cn.DecisionAbstention(candidates=["r1"], message="abstained",
                                      evidence=cn.QuestionsEvidence(questions={"r1": ["team"]}))
    esc = check_result(item.task, _route(item), _decision([cand], abstained), CFG)
    assert esc.reason == "decision_abstention" and esc.blocking and "r1 on team" in esc.question


def test_decision_low_confidence_names_candidate_question_and_confidence():
    item = _item(question_task(id="low"))
    cand = CandidateResult(id="r1", score=1.0, passed=True)
    res = _decision([cand], cn.DecisionLowConfidence(
        candidates=["r1"], message="unsure",
        evidence=cn.LowConfidenceEvidence(questions={"r1": ["team"]}, confidence={"r1": 0.41})))
    esc = check_result(item.task, _route(item), res, CFG)
    assert esc.reason == "decision_low_confidence" and not esc.blocking
    assert "'r1'" in esc.question and "team" in esc.question and "0.41" in esc.question


def test_decision_order_flip_names_both_winners():
    item = _item(open_task(id="flip"))
    cands = [CandidateResult(id="a", score=0.52), CandidateResult(id="b", score=0.48)]
    res = _decision(cands, cn.DecisionOrderFlip(candidates=["a", "b"], message="flip",
                                                evidence=cn.OrderFlipEvidence(winners_by_order=["a", "b"])))
    esc = check_result(item.task, _route(item), res, CFG)
    assert esc.reason == "decision_order_flip" and esc.options == ["a", "b"]
    assert "'a' in the given order and 'b' with the order reversed" in esc.question
    assert "inseparable_candidates" in esc.evidence["also"]


def test_pairwise_order_inconsistency_names_the_pair():
    item = _item(open_task(id="pairs"))
    res = EvaluationResult(evaluator="llm_judge", status=Status.ok,
                           candidates=[CandidateResult(id="a", score=0.9), CandidateResult(id="b", score=0.1)],
                           concerns=[cn.OrderInconsistent(candidates=["a", "b"], message="flipped",
                                                          evidence=cn.PairsEvidence(pairs=[("a", "b")]))])
    esc = check_result(item.task, _route(item), res, CFG)
    assert esc.reason == "pairwise_order_inconsistent" and esc.options == ["a", "b"]
    assert "preferred 'a' over 'b' in one order and 'b' over 'a'" in esc.question


def test_preference_cycle_spells_the_cycle():
    item = _item(open_task(id="cyc"))
    res = EvaluationResult(evaluator="llm_judge", status=Status.ok,
                           candidates=[CandidateResult(id=c, score=s) for c, s in (("a", .9), ("b", .5), ("c", .1))],
                           concerns=[cn.PreferenceCycle(candidates=["a", "b", "c"], message="cycle",
                                                        evidence=cn.CyclesEvidence(cycles=[["a", "b", "c"]]))])
    esc = check_result(item.task, _route(item), res, CFG)
    assert esc.reason == "preference_cycle" and "a > b > c > a" in esc.question
    assert esc.options == ["a", "b", "c"]


def test_inseparable_candidates_uses_the_configured_spread():
    item = _item(open_task(id="close"))
    res = EvaluationResult(evaluator="llm_judge", status=Status.ok,
                           candidates=[CandidateResult(id="a", score=0.70), CandidateResult(id="b", score=0.68)])
    esc = check_result(item.task, _route(item), res, CFG)
    assert esc.reason == "inseparable_candidates" and "'a' and 'b'" in esc.question
    assert "0.700 vs 0.680" in esc.question
    assert check_result(item.task, _route(item), res, EscalationConfig(score_spread=0.01)) is None


def test_verifier_tie_between_two_passing_candidates_is_not_escalated():
    item = _item(code_task(id="two-fixes"))
    both_pass = EvaluationResult(evaluator="verifier", status=Status.ok, candidates=[
        CandidateResult(id="a", score=1.0, passed=True), CandidateResult(id="b", score=1.0, passed=True)])
    assert check_result(item.task, _route(item), both_pass, CFG) is None
    both_half = EvaluationResult(evaluator="verifier", status=Status.ok, candidates=[
        CandidateResult(id="a", score=0.5, passed=False), CandidateResult(id="b", score=0.5, passed=False)])
    esc = check_result(item.task, _route(item), both_half, CFG)
    assert esc is not None and esc.reason == "inseparable_candidates"


def test_clean_result_raises_nothing_and_ids_are_stable():
    item = _item(open_task(id="clean"))
    res = EvaluationResult(evaluator="llm_judge", status=Status.ok,
                           candidates=[CandidateResult(id="a", score=0.9), CandidateResult(id="b", score=0.2)])
    assert result_triggers(item.task, _route(item), res, CFG) == []
    close = res.model_copy(update={"candidates": [CandidateResult(id="a", score=.5),
                                                  CandidateResult(id="b", score=.5)]})
    first = check_result(item.task, _route(item), close, CFG)
    again = check_result(item.task, _route(item), close, CFG)
    assert first.id == again.id and first.id.startswith("esc-")
    assert len(REASONS) == len(set(REASONS)) == 15


def test_real_decision_refusal_through_the_oracle_is_stored_pending(scripted_server, tmp_path):
    """End to end: the scripted decision endpoint refuses; the Oracle files a blocking request."""
    from oracle.escalation.store import EscalationStore
    from tests.plugins.scripted_server import decision_handler

    scripted_server.set_handler(decision_handler(refuse={"team": "cannot judge customer data"}))
    config = OracleConfig.model_validate({"providers": {
        "judge": {"base_url": scripted_server.base_url, "max_retries": 0},
        "decision": {"kind": "decisions", "base_url": scripted_server.base_url, "max_retries": 0}}})
    with EscalationStore(tmp_path / "esc.sqlite") as store:
        res = Oracle(config, store=store).evaluate(question_task(id="refused-live"))
        assert res.route.evaluator == "decision_judge"
        assert res.status == Status.pending
        assert res.escalation.reason == "decision_refusal"
        assert "cannot judge customer data" in res.escalation.question
        [entry] = store.list("pending")
        assert entry.id == res.escalation.id and entry.item.task.id == "refused-live"
