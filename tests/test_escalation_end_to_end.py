"""Every result-level escalation trigger, end to end: real evaluator -> typed concern -> request.

The verifier runs real code in the sandbox; the judges talk to the scripted OpenAI-compatible and
decision server over a real socket. Each test goes through ``Oracle.evaluate`` (route, evaluator,
escalation) and then checks that the request does not depend on the evaluator's free-form
``details``: the same result with every detail wiped gives the identical request. The route-level
triggers (no_feasible_evaluator, low_route_confidence) involve no evaluator and are covered in
tests/test_escalation_triggers.py.
"""

from __future__ import annotations

import os

import pytest

from oracle.config.model import EscalationConfig, OracleConfig
from oracle.escalation._triggers import REASONS, check_result
from oracle._oracle import Oracle, as_task_input
from oracle.results.result import OracleResult, Status
from tests.data.tasks import code_task, open_task, question_task
from tests.plugins.scripted_server import chat_reply, decision_handler
from tests.test_llm_judge import pairwise_reply, pointwise_json, prefer, seats

COVERED = set()
"""Reasons exercised here; the last test checks that every result-level reason is."""

# Under pytest-xdist's loadgroup (the suite's default) the module runs on one worker, in order, so
# the last test sees every reason the others covered.
pytestmark = pytest.mark.xdist_group("escalation_end_to_end")


def _run(config: OracleConfig, data: dict) -> OracleResult:
    oracle = Oracle(config)
    try:
        return oracle.evaluate(data)
    finally:
        verifier = oracle.evaluator("verifier") if data["task"].get("evaluator") == "verifier" else None
        if verifier is not None:
            verifier.close()  # type: ignore[attr-defined]


def _run_routed_to(config: OracleConfig, data: dict, evaluator: str) -> OracleResult:
    """The Oracle's own steps (route, the named evaluator, the escalation check) with the evaluator
    given: for tasks whose routing another part of the project decides (the claim check's)."""
    import asyncio

    oracle = Oracle(config)
    item = as_task_input(data)
    route = oracle.route(item)
    result = asyncio.run(oracle.run_evaluator(item, route, evaluator))
    escalation = check_result(item.task, route, result, config.escalation, [t.id for t in item.trajectories])
    return OracleResult(task_id=item.task.id, status=result.status, route=route, result=result,
                        escalation=escalation)


def _request(res: OracleResult, data: dict, reason: str):
    """The request the Oracle attached, checked to come from the concerns and typed fields alone."""
    assert res.result is not None and res.escalation is not None, res
    assert res.escalation.reason == reason, (res.escalation, res.result.concerns)
    wiped = res.result.model_copy(update={
        "details": {}, "candidates": [c.model_copy(update={"details": {}}) for c in res.result.candidates]})
    again = check_result(_task(data), res.route, wiped, EscalationConfig(), [t["id"] for t in data["trajectories"]])
    assert again is not None and again.model_dump() == res.escalation.model_dump()
    COVERED.add(reason)
    return res.escalation


def _task(data: dict):
    from oracle.tasks.task import TaskInput

    return TaskInput.model_validate(data).task


def _kinds(res: OracleResult) -> list[str]:
    assert res.result is not None
    return [c.kind for c in res.result.concerns]


# -- verifier: real code in the sandbox -------------------------------------------------------------

def _verifier(**verifier) -> OracleConfig:
    return OracleConfig(verifier={"timeout_s": 8, "workers": 2, **verifier})


def test_sandbox_failure_offers_rerun_or_a_candidate():
    # Every candidate needs a module this machine lacks (a test that imports one is broken instead).
    data = code_task(id="env", evaluator="verifier", tests=[{"kind": "assert", "code": "assert add(1, 2) == 3"}] * 2)
    for t in data["trajectories"]:
        t["answer"] = "import not_installed_module_xyz\n" + t["answer"].replace(
            "    return", "def add(a, b):\n    return"
        )
    res = _run(_verifier(), data)
    assert res.result.status is Status.failed and _kinds(res) == ["sandbox_failure"]
    esc = _request(res, data, "verifier_infrastructure_failure")
    assert esc.blocking and esc.options == ["rerun", "good", "bad"]
    assert "not_installed_module_xyz" in esc.question and res.status == Status.failed


def test_broken_tests_are_reported_once_and_the_verdict_stands_on_the_rest():
    tests = [{"kind": "call", "call": "add(2, 3)", "expected": 5},
             {"kind": "assert", "code": "import not_installed_module_xyz\nassert add(1, 1) == 2", "name": "needs"}]
    data = code_task(id="half", evaluator="verifier", tests=tests)
    res = _run(_verifier(), data)
    assert res.result.status is Status.ok and [b.test for b in res.result.broken_tests] == ["needs"]
    assert "broken_tests" in _kinds(res)
    assert res.result.candidate("good").passed is True and res.result.candidate("bad").score == 0.0
    esc = _request(res, data, "broken_tests")
    assert not esc.blocking and esc.options == ["accept", "rerun"]
    assert "not_installed_module_xyz" in esc.question and "scored on the 1 that ran" in esc.question


def test_every_test_broken_fails_the_task_and_asks_for_the_tests():
    data = code_task(
        id="all", evaluator="verifier", tests=[{"kind": "assert", "code": "import not_installed_module_xyz"}]
    )
    res = _run(_verifier(), data)
    assert res.result.status is Status.failed and res.result.error.type == "BrokenTests"
    assert _kinds(res) == ["broken_tests"]
    esc = _request(res, data, "broken_tests")
    assert esc.blocking and esc.options == ["rerun", "good", "bad"] and "Every test" in esc.question


def test_task_the_verifier_cannot_run_offers_the_judges():
    long = [{"kind": "call", "call": "add(2, 3)", "expected": 5, "timeout_s": 30}]
    data = code_task(id="long", evaluator="verifier", tests=long)
    res = _run(_verifier(max_timeout_s=10), data)
    assert _kinds(res) == ["task_unrunnable"] and res.result.error.type == "TaskValidationError"
    esc = _request(res, data, "verifier_task_unrunnable")
    assert esc.blocking and esc.options == ["decision_judge", "llm_judge"]
    assert "task.tests[0].timeout_s" in esc.question


def test_in_process_integrity_asks_before_the_verdict_stands():
    data = code_task(id="inproc", evaluator="verifier", execution="in_process")
    res = _run(_verifier(allow_in_process=True), data)
    assert res.result.status is Status.ok and res.result.provenance.integrity == "in_process"
    [weak] = [c for c in res.result.concerns if c.kind == "weak_isolation"]
    assert weak.evidence.integrity == "in_process"
    esc = _request(res, data, "isolation_below_required")
    assert esc.blocking and esc.options == ["accept", "rerun"] and "in_process" in esc.question
    assert esc.evidence["isolation_level"] == res.result.provenance.isolation_level


def test_landlock_isolation_is_below_the_default_requirement():
    from oracle.sandbox.layers import probe

    if "landlock" not in probe().available:
        pytest.skip("no Landlock on this machine")
    data = code_task(id="landlock", evaluator="verifier")
    res = _run(_verifier(backend="landlock"), data)
    assert res.result.provenance.isolation_level == "landlock" and res.result.provenance.integrity == "isolated"
    esc = _request(res, data, "isolation_below_required")
    assert "'landlock' isolation, below the required 'namespaces'" in esc.question


def test_strongest_isolation_raises_no_isolation_concern():
    data = code_task(id="strong", evaluator="verifier")
    res = _run(_verifier(), data)
    if res.result.provenance.isolation_level != "namespaces":
        pytest.skip("no namespace sandbox on this machine")
    assert res.result.concerns == [] and res.escalation is None  # good passes, bad fails: clear


def test_no_candidate_passed_names_each_first_failure():
    tests = [{"kind": "call", "name": "small", "call": "add(1, 2)", "expected": 3},
             {"kind": "call", "name": "big", "call": "add(10, 20)", "expected": 30}]
    data = code_task(id="none", evaluator="verifier", tests=tests)
    data["trajectories"] = [{"id": "minus", "code": "def add(a, b):\n    return a - b\n"},
                            {"id": "times", "code": "def add(a, b):\n    return a * b\n"}]
    res = _run(_verifier(), data)
    assert "no_candidate_passed" in _kinds(res)
    esc = _request(res, data, "inseparable_candidates")
    assert "small: fail: add(1, 2): expected 3, got -1" in esc.question and esc.options == ["minus", "times", "none"]


# -- decision judge: the scripted decision endpoint ------------------------------------------------

def _decision(server, kind: str = "decisions") -> OracleConfig:
    return OracleConfig.model_validate({"providers": {
        "judge": {"base_url": server.base_url, "max_retries": 0},
        "decision": {"kind": kind, "base_url": server.base_url, "max_retries": 0}}})


def test_decision_refusal(scripted_server):
    scripted_server.set_handler(decision_handler(refuse={"team": "cannot judge customer data"}))
    data = question_task(id="refused", evaluator="decision_judge")
    res = _run(_decision(scripted_server), data)
    assert _kinds(res)[0] == "decision_refusal"
    esc = _request(res, data, "decision_refusal")
    assert esc.blocking and "r1: team" in esc.question and "cannot judge customer data" in esc.question


def test_decision_abstention(scripted_server):
    scripted_server.set_handler(decision_handler(probabilities={
        "team": {"billing": 0.1, "technical": 0.1, "unsure": 0.8}}))
    data = question_task(id="abstain", evaluator="decision_judge")
    data["task"]["questions"][0]["options"]["unsure"] = "cannot tell"
    data["task"]["questions"][0]["abstain_option"] = "unsure"
    res = _run(_decision(scripted_server), data)
    assert res.result.status is Status.abstained and "decision_abstention" in _kinds(res)
    esc = _request(res, data, "decision_abstention")
    assert esc.blocking and "r1 on team" in esc.question and esc.options == ["pass", "fail"]


def test_decision_low_confidence_on_an_exact_tie(scripted_server):
    scripted_server.set_handler(decision_handler(probabilities={"team": {"billing": 0.5, "technical": 0.5}}))
    data = question_task(id="tie", evaluator="decision_judge")
    res = _run(_decision(scripted_server), data)
    assert _kinds(res) == ["decision_low_confidence"]
    esc = _request(res, data, "decision_low_confidence")
    assert not esc.blocking and "'r1'" in esc.question and "question(s) team" in esc.question


def test_decision_order_flip(scripted_server):
    def first_wins(request):
        labels = list(request.json["questions"]["best_response"]["criteria"])  # System One wire format
        return decision_handler(probabilities={"best_response": {labels[0]: 0.8, labels[1]: 0.2}})(request)

    scripted_server.set_handler(first_wins)
    data = open_task(id="flip", evaluator="decision_judge", questions=[{  # a comparison: options = the ids
        "id": "best_response", "type": "choice", "instructions": "Which email is friendlier?",
        "options": {"a": "", "b": ""}}])
    res = _run(_decision(scripted_server, "systemone"), data)
    assert "decision_order_flip" in _kinds(res), res.result
    esc = _request(res, data, "decision_order_flip")
    assert esc.options == ["a", "b"] and "'a' in the given order and 'b' with the order reversed" in esc.question


def test_panel_disagreement(scripted_server):
    """Two of three panel members say billing, one says technical: the majority's verdict, and a question."""
    def by_member(request):
        billing = 0.1 if request.json.get("model") == "m-z" else 0.9
        return decision_handler(probabilities={"team": {"billing": billing, "technical": 1 - billing}})(request)

    scripted_server.set_handler(by_member)
    member = {"kind": "decisions", "base_url": scripted_server.base_url, "max_retries": 0}
    config = OracleConfig.model_validate({
        "providers": {"judge": {"base_url": scripted_server.base_url, "max_retries": 0},
                      "endpoints": {n: {**member, "model": f"m-{n}"} for n in "xyz"}},
        "decision_judge": {"panel": [{"provider": n} for n in "xyz"], "panel_aggregate": "majority"}})
    data = question_task(id="panel", evaluator="decision_judge")
    res = _run(config, data)
    assert res.result.candidates[0].details["questions"][0]["selected"] == "billing"
    assert "panel_disagreement" in _kinds(res), res.result
    esc = _request(res, data, "panel_disagreement")
    assert not esc.blocking and "m-z: technical" in esc.question and esc.options == ["pass", "fail"]
    assert esc.evidence["members"] == ["m-x", "m-y", "m-z"] and esc.evidence["spreads"] == {"r1": {"team": 0.8}}


def test_claim_check_disagreement_shows_both_probabilities(scripted_server):
    """Supported (0.9) and also strongly challenged (0.8): no verdict, a blocking request quoting both."""
    scripted_server.set_handler(decision_handler(probabilities={"claim_supported": 0.9, "claim_challenged": 0.8}))
    data = {"task": {"id": "claim", "prompt": "When did the store open?", "evaluator": "decision_judge",
                     "context": "The store opened in March 2019 after two years of planning.",
                     "claim_check": True},
            "trajectories": [{"id": "r1", "answer": "The store opened in 2019."}]}
    res = _run_routed_to(_decision(scripted_server, "systemone"), data, "decision_judge")
    assert res.result.status is Status.abstained and _kinds(res) == ["claim_undecided"], res.result
    assert len(scripted_server.requests) == 1  # both questions in one native call
    esc = _request(res, data, "claim_check_undecided")
    assert esc.blocking and esc.options == ["pass", "fail"]
    assert "= 0.90" in esc.question and "= 0.80" in esc.question and "disagree" in esc.question
    assert (esc.evidence["support"], esc.evidence["challenge"], esc.evidence["reason"]) == (0.9, 0.8, "disagreement")


# -- LLM judge: the scripted OpenAI-compatible endpoint --------------------------------------------

def _judge(server, **judge) -> OracleConfig:
    return OracleConfig(providers={"judge": server.provider_settings()}, llm_judge={"logprobs": False, **judge})


def test_pairwise_order_inconsistency(scripted_server):
    scripted_server.set_handler(lambda req: chat_reply(pairwise_reply("A")))  # follows the seat
    data = open_task(id="seat", evaluator="llm_judge")
    res = _run(_judge(scripted_server, mode="pairwise"), data)
    assert _kinds(res)[0] == "order_inconsistent"
    esc = _request(res, data, "pairwise_order_inconsistent")
    assert esc.options == ["a", "b"] and "preferred 'a' over 'b' in one order" in esc.question


def test_preference_cycle(scripted_server):
    beats = {("rock", "scissors"), ("scissors", "paper"), ("paper", "rock")}
    scripted_server.set_handler(lambda req: chat_reply(pairwise_reply("A" if seats(req) in beats else "B")))
    data = open_task(id="rps", evaluator="llm_judge")
    data["trajectories"] = [{"id": i, "answer": a} for i, a in (("r", "rock"), ("p", "paper"), ("s", "scissors"))]
    res = _run(_judge(scripted_server, mode="pairwise"), data)
    assert "preference_cycle" in _kinds(res)
    esc = _request(res, data, "preference_cycle")
    assert "p > r > s > p" in esc.question and esc.options == ["p", "r", "s"]


def test_inseparable_llm_scores(scripted_server):
    scripted_server.set_handler(lambda req: chat_reply(pointwise_json({"overall": 7})))
    data = open_task(id="close", evaluator="llm_judge")
    res = _run(_judge(scripted_server, mode="pointwise"), data)
    assert _kinds(res) == ["tied_best"]
    esc = _request(res, data, "inseparable_candidates")
    assert "judged on pointwise" in esc.question and esc.options == ["a", "b"]


def test_a_clear_pairwise_winner_raises_nothing(scripted_server):
    scripted_server.set_handler(prefer({"Dear neighbour, ...": 0, "Hi! Hope you're well ...": 1}))
    res = _run(_judge(scripted_server, mode="pairwise"), open_task(id="clear", evaluator="llm_judge"))
    assert res.result.concerns == [] and res.escalation is None and res.result.best == ["a"]


def test_a_split_judge_panel(scripted_server):
    from tests.test_llm_judge_panel import panel_config, panel_server

    panel_server(scripted_server)  # honest-1 prefers the better answer in either seat; seat-a picks seat A
    cfg = panel_config(scripted_server, ["honest-1", "seat-a"], mode="pairwise")
    data = {"task": {"id": "panel", "prompt": "p", "evaluator": "llm_judge"},
            "trajectories": [{"id": "m", "answer": "middle answer"}, {"id": "b", "answer": "best answer"}]}
    res = _run(cfg, data)
    assert "panel_disagreement" in _kinds(res) and res.result.best == ["b"]
    esc = _request(res, data, "panel_disagreement")
    assert esc.options == ["m", "b"] and esc.evidence["members"] == ["honest-1", "seat-a"]


def test_every_result_level_reason_is_covered_end_to_end(request):
    # xdist's loadgroup names the group in the node id: without it the module may be spread
    spread = os.environ.get("PYTEST_XDIST_WORKER") and not request.node.nodeid.endswith("@escalation_end_to_end")
    if len(COVERED) < 3 or spread:
        # a selection of the module, or xdist spreading its tests over workers: a whole run checks it
        pytest.skip("run with the whole module in one process")
    route_level = {"no_feasible_evaluator", "low_route_confidence"}
    assert set(REASONS) - route_level <= COVERED, set(REASONS) - route_level - COVERED
