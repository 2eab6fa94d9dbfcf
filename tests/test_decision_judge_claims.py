"""Claim checks: "supported by the evidence" against "strong evidence that it is wrong".

The rule is a pure function (checked as a table); the calls go over real HTTP: both questions in one
call on a native System One endpoint (the scripted server counts them, and jevcompat's reference
server answers them as a third party), one readout call each on an OpenAI-compatible endpoint.
"""

from __future__ import annotations

import math

import httpx
import pytest

from oracle.config.model import ClaimCheckConfig, DecisionJudgeConfig, OracleConfig, ProviderSettings, ProvidersConfig
from oracle.escalation._triggers import check_result
from oracle._oracle import Oracle
from oracle.providers.decisions import SystemOneFormat
from oracle.results.result import Status
from oracle._evaluators import evaluator_factory
from oracle.strategies.protocol import EvaluationContext
from oracle.strategies.decision_judge.claims import CLAIM_QUESTIONS, claim_verdict
from oracle.strategies.decision_judge.requests import decision_request
from oracle.tasks.task import Task, Trajectory
from tests.plugins.jevcompat_server import jevcompat_mock
from tests.plugins.scripted_server import RecordedRequest, chat_reply, decision_handler

CONTEXT = "The Harbour Street store opened in March 2019, after two years of planning."
TASK = Task(id="opening", prompt="When did the Harbour Street store open?", context=CONTEXT, claim_check=True)
CLAIM = Trajectory(id="r1", answer="It opened in 2019.", metadata={"agent": "support-bot"})


def _config(judge: ProviderSettings, decision: ProviderSettings | None = None, **claim) -> OracleConfig:
    return OracleConfig(providers=ProvidersConfig(judge=judge, decision=decision),
                        decision_judge=DecisionJudgeConfig(claim_check=ClaimCheckConfig(**claim)))


async def _evaluate(config: OracleConfig, task: Task = TASK, *cands: Trajectory):
    judge = evaluator_factory("decision_judge")()
    return await judge.evaluate(EvaluationContext(task=task, trajectories=cands or (CLAIM,), config=config))


@pytest.mark.parametrize("support, challenge, outcome, reason", [
    (0.9, 0.1, "supported", "agreement"),
    (0.1, 0.9, "refuted", "agreement"),
    (0.9, 0.9, "undecided", "disagreement"),   # supported and strongly contradicted
    (0.1, 0.1, "undecided", "disagreement"),   # neither supported nor contradicted
    (0.6, 0.1, "undecided", "weak_support"),
    (0.9, 0.5, "undecided", "weak_challenge"),
    (0.5, 0.5, "undecided", "weak_both"),
    (0.7, 0.3, "supported", "agreement"),      # the thresholds are inclusive
])
def test_the_rule(support, challenge, outcome, reason):
    v = claim_verdict(support, challenge, support_threshold=0.7, challenge_threshold=0.7)
    assert (v.outcome, v.reason) == (outcome, reason)
    assert v.passed is {"supported": True, "refuted": False, "undecided": None}[outcome]
    assert (v.score is None) == (outcome == "undecided")
    assert (v.concern("r1") is None) == (outcome != "undecided")


def test_the_thresholds_come_from_the_config():
    assert claim_verdict(0.9, 0.05, support_threshold=0.95, challenge_threshold=0.7).reason == "weak_support"
    assert claim_verdict(0.9, 0.2, support_threshold=0.7, challenge_threshold=0.9).reason == "weak_challenge"
    with pytest.raises(ValueError):
        ClaimCheckConfig(support_threshold=0.5)  # at 0.5 the yes and no regions would overlap


@pytest.mark.parametrize("support, challenge, status, passed", [
    (0.92, 0.05, Status.ok, True), (0.08, 0.9, Status.ok, False), (0.9, 0.85, Status.abstained, None)])
async def test_native_endpoint_one_call_with_both_questions(scripted_server, support, challenge, status, passed):
    scripted_server.set_handler(decision_handler(probabilities={
        "claim_supported": support, "claim_challenged": challenge}))
    config = _config(scripted_server.provider_settings(),
                     scripted_server.provider_settings(kind="systemone", model="d"))
    result = await _evaluate(config)
    assert len(scripted_server.requests) == 1 == result.calls
    body = scripted_server.requests[0].json
    assert [(q["type"], q["instructions"]) for q in body["questions"].values()] == [
        ("noul", "The claim is supported by the evidence."),
        ("noul", "There is strong evidence that the claim is wrong.")]
    # the model sees the question, the evidence and the claim, nothing else (no candidate metadata)
    assert body["state"] == {"question": TASK.prompt, "evidence": CONTEXT, "claim": CLAIM.answer}
    (cand,) = result.candidates
    assert (result.status, cand.status, cand.passed) == (status, status, passed)
    check = cand.details["claim_check"]
    assert (check["support"], check["challenge"]) == pytest.approx((support, challenge))
    if status is Status.ok:
        assert cand.score == pytest.approx((support + 1 - challenge) / 2) and result.concerns == []
        assert result.best == ([CLAIM.id] if passed else [])
    else:
        assert cand.score is None and [c.kind for c in result.concerns] == ["claim_undecided"]


def _readout(support: float, challenge: float):
    """A chat endpoint answering each claim question's Yes/No readout with the given P(yes)."""
    def handle(request: RecordedRequest):
        text = request.json["messages"][-1]["content"]
        p = challenge if "strong evidence that the claim is wrong" in text else support
        top = {"Yes": math.log(p), "No": math.log(1 - p)}
        token = "Yes" if p >= 0.5 else "No"
        return chat_reply(token, logprobs=[(token, top[token], top)], completion_tokens=1)
    return handle


async def test_logprob_readout_one_call_per_question(scripted_server):
    scripted_server.set_handler(_readout(0.9, 0.1))
    result = await _evaluate(_config(scripted_server.provider_settings()))
    assert len(scripted_server.requests) == 2 == result.calls
    assert result.details["backend"] == "logprob_readout"
    (cand,) = result.candidates
    assert cand.passed is True and cand.details["claim_check"]["outcome"] == "supported"
    for request in scripted_server.requests:
        text = request.json["messages"][-1]["content"]
        assert CONTEXT in text and CLAIM.answer in text and "support-bot" not in text


async def test_weak_confidence_on_one_side_abstains_with_an_escalation_showing_both(scripted_server):
    scripted_server.set_handler(_readout(0.95, 0.45))  # supported, but the challenge is undecided
    result = await _evaluate(_config(scripted_server.provider_settings()))
    assert result.status == Status.abstained and result.candidates[0].score is None
    [concern] = result.concerns
    assert concern.kind == "claim_undecided" and concern.evidence.reason == "weak_challenge"
    request = check_result(TASK, Oracle().route(TASK, [CLAIM]), result, OracleConfig().escalation, [CLAIM.id])
    assert request is not None and request.reason == "claim_check_undecided" and request.blocking
    assert "= 0.95" in request.question and "= 0.45" in request.question
    assert "second answer is not decisive" in request.question
    assert request.evidence["support"] == pytest.approx(0.95) and request.evidence["challenge"] == pytest.approx(0.45)


async def test_against_the_reference_server_the_verdict_follows_its_probabilities():
    """jevcompat answers both questions in one request; our verdict is the rule applied to its nouls."""
    with jevcompat_mock() as url:
        decision = ProviderSettings(kind="systemone", base_url=url, model="jev-latest", max_retries=0)
        result = await _evaluate(_config(ProviderSettings(base_url=url), decision))
        body = SystemOneFormat(decision).build_body(decision_request(
            {"question": TASK.prompt, "evidence": CONTEXT, "claim": CLAIM.answer}, list(CLAIM_QUESTIONS)))
        raw = httpx.post(f"{url}/systemone", json=body, timeout=20).json()["answers"]
    assert result.calls == 1 and result.status in (Status.ok, Status.abstained), result.error
    expected = claim_verdict(raw["claim_supported"]["noul"], raw["claim_challenged"]["noul"],
                             support_threshold=0.7, challenge_threshold=0.7)
    check = result.candidates[0].details["claim_check"]
    assert (check["support"], check["challenge"]) == pytest.approx((expected.support, expected.challenge))
    assert (check["outcome"], result.candidates[0].passed) == (expected.outcome, expected.passed)
    assert [c.kind for c in result.concerns] == ([] if expected.outcome != "undecided" else ["claim_undecided"])


async def test_a_claim_check_with_its_own_criteria_is_refused_before_any_call(scripted_server):
    task = Task.model_validate({**TASK.model_dump(), "criteria": ["is polite"]})
    result = await _evaluate(_config(scripted_server.provider_settings()), task)
    assert result.status == Status.failed
    assert "task.criteria: a claim check asks its own two questions" in result.error.message
    assert scripted_server.requests == []
    two = await _evaluate(_config(scripted_server.provider_settings()), TASK, CLAIM, Trajectory(id="r2", answer="2018"))
    assert two.status == Status.failed and "a claim check judges one claim" in two.error.message
    assert scripted_server.requests == []


async def test_a_claim_check_chosen_by_the_route_from_the_prompt_runs_as_one(scripted_server):
    """No claim_check option: the router reads "is this claim supported" with context on one candidate,
    routes to the decision judge with claim_check set, and the judge asks the two claim questions."""
    scripted_server.set_handler(decision_handler(probabilities={"claim_supported": 0.93, "claim_challenged": 0.04}))
    config = _config(scripted_server.provider_settings(),
                     scripted_server.provider_settings(kind="systemone", model="d"))
    task = {"task": {"id": "cue", "prompt": "Is this claim supported by the context?", "context": CONTEXT},
            "trajectories": [{"id": "r1", "answer": "It opened in 2019."}]}
    res = await Oracle(config).aevaluate(task)
    assert res.route.evaluator == "decision_judge" and res.route.claim_check
    assert res.result.details["mode"] == "claim_check" and res.status == Status.ok
    assert res.result.candidates[0].passed is True
    body = scripted_server.requests[0].json
    assert sorted(body["questions"]) == ["claim_challenged", "claim_supported"]
