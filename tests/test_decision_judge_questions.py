"""Decision questions as the decision wire formats define them, end to end over real HTTP.

The scripted server shows what we send (wire type names, the model per call); jevcompat's reference
server (a third-party System One implementation) shows that our raw readings match what a System
One server itself reports, and that a per-question model reaches that server.
"""

from __future__ import annotations

import math

import httpx
import pytest

from oracle.config.model import DecisionJudgeConfig, OracleConfig, ProviderSettings, ProvidersConfig
from oracle.providers.decisions import SystemOneFormat
from oracle.tasks.questions import Question
from oracle.results.result import Status
from oracle._evaluators import evaluator_factory
from oracle.strategies.protocol import EvaluationContext
from oracle.strategies.decision_judge.requests import decision_request
from oracle.tasks.task import Task, Trajectory
from tests.plugins.jevcompat_server import jevcompat_mock
from tests.plugins.scripted_server import chat_reply, decision_handler

CAND = Trajectory(id="r1", answer="Sorry about the double charge! Could you send me the order number?")
REFUND = Question(id="refund", type="noul", instructions="Does the reply promise a refund?")
TEAM = Question(id="team", type="choice", instructions="Which team should handle it?",
                options={"billing": "payments", "technical": "bugs"}, scores={"billing": 5, "technical": 1})
URGENCY = Question(id="urgency", type="score", instructions="How urgent is the ticket?",
                   levels=["low", "medium", "high", "cannot tell"], abstain_option="cannot tell")


def _config(settings_judge: ProviderSettings, decision: ProviderSettings | None = None, **judge) -> OracleConfig:
    return OracleConfig(providers=ProvidersConfig(judge=settings_judge, decision=decision),
                        decision_judge=DecisionJudgeConfig(**judge))


async def _evaluate(config: OracleConfig, task: Task, *cands: Trajectory):
    judge = evaluator_factory("decision_judge")()
    return await judge.evaluate(EvaluationContext(task=task, trajectories=cands or (CAND,), config=config))


def _by_id(result) -> dict:
    return {q["question_id"]: q for q in result.candidates[0].details["questions"]}


async def test_raw_scale_and_raw_score_beside_the_normalized_score(scripted_server):
    scripted_server.set_handler(decision_handler(probabilities={
        "refund": 0.8, "team": {"billing": 0.7, "technical": 0.3},
        "urgency": {"low": 0.1, "medium": 0.3, "high": 0.5, "cannot tell": 0.1}}))
    task = Task(id="t", prompt="I was charged twice.", questions=[REFUND, TEAM, URGENCY])
    result = await _evaluate(_config(scripted_server.provider_settings(),
                                     scripted_server.provider_settings(kind="systemone", model="d")), task)
    assert result.status == Status.ok, result.error
    sent = scripted_server.requests[0].json["questions"]
    assert sent["refund"]["type"] == "noul"  # 'noul' in the task file, 'noul' on the wire
    q = _by_id(result)
    assert (q["refund"]["raw_scale"], q["refund"]["raw_score"], q["refund"]["score"]) == ("categorical", 0.8, 1.0)
    assert (q["team"]["raw_scale"], q["team"]["raw_score"], q["team"]["option_score"]) == ("categorical", "billing", 5)
    assert q["urgency"]["raw_scale"] == (0, 3)
    assert q["urgency"]["raw_score"] == pytest.approx(0.3 * 1 + 0.5 * 2 + 0.1 * 3)  # expected level index
    assert (q["urgency"]["selected"], q["urgency"]["option_score"], q["urgency"]["score"]) == ("high", 5.0, 1.0)


async def test_abstain_option_on_a_score_question(scripted_server):
    scripted_server.set_handler(decision_handler(probabilities={
        "urgency": {"low": 0.1, "medium": 0.1, "high": 0.2, "cannot tell": 0.6}}))
    task = Task(id="t", prompt="I was charged twice.", questions=[URGENCY])
    result = await _evaluate(_config(scripted_server.provider_settings(),
                                     scripted_server.provider_settings(kind="decisions", model="d")), task)
    (cand,) = result.candidates
    assert (cand.status, cand.score, cand.passed) == (Status.abstained, None, None)
    assert [c.kind for c in result.concerns] == ["decision_abstention"]
    assert _by_id(result)["urgency"]["abstained"] is True


async def test_raw_readings_match_what_the_reference_server_itself_reports():
    """jevcompat's own noul / choice / score fields for the same request equal our raw_score."""
    task = Task(id="t", prompt="I was charged twice.", questions=[REFUND, TEAM, URGENCY])
    with jevcompat_mock() as url:
        decision = ProviderSettings(kind="systemone", base_url=url, model="jev-latest", max_retries=0)
        result = await _evaluate(_config(ProviderSettings(base_url=url), decision), task)
        assert result.status in (Status.ok, Status.abstained), result.error
        state = {"prompt": task.prompt, "response": CAND.answer}
        body = SystemOneFormat(decision).build_body(decision_request(state, task.questions))
        raw = httpx.post(f"{url}/systemone", json=body, timeout=20).json()["answers"]
    q = _by_id(result)
    assert q["refund"]["raw_score"] == pytest.approx(raw["refund"]["noul"], abs=1e-9)
    assert q["team"]["raw_score"] == raw["team"]["choice"]
    assert q["urgency"]["raw_score"] == pytest.approx(raw["urgency"]["score"], abs=1e-6)
    assert q["urgency"]["raw_scale"] == (0, 3)


async def test_a_question_model_goes_only_to_the_decision_endpoint(scripted_server):
    scripted_server.set_handler(decision_handler())
    task = Task(id="t", prompt="I was charged twice.",
                questions=[REFUND.model_copy(update={"model": "jev-latest"}), TEAM,
                           URGENCY.model_copy(update={"model": "house-decider"})])  # the endpoint's own
    config = _config(scripted_server.provider_settings(model="chat-model"),
                     scripted_server.provider_settings(kind="systemone", model="house-decider"))
    result = await _evaluate(config, task)
    assert result.status == Status.ok, result.error
    models = sorted((r.json["model"], tuple(r.json["questions"])) for r in scripted_server.requests)
    assert models == [("house-decider", ("team", "urgency")), ("jev-latest", ("refund",))]  # one call per model
    assert result.details["model_overrides"] == {"refund": {"model": "jev-latest", "applied": True},
                                                 "urgency": {"model": "house-decider", "applied": True}}
    assert sorted(c.model_requested for c in result.provenance.calls) == ["house-decider", "jev-latest"]
    # a logprob readout on the chat endpoint never sends the decision model's name there
    scripted_server.clear()
    top = {"Yes": math.log(0.7), "No": math.log(0.3)}
    scripted_server.set_handler(lambda r: chat_reply("Yes", logprobs=[("Yes", top["Yes"], top)], completion_tokens=1))
    task = Task(id="t", prompt="p", questions=[REFUND.model_copy(update={"model": "jev-latest"})])
    result = await _evaluate(_config(scripted_server.provider_settings(model="chat-model")), task)
    assert [r.json["model"] for r in scripted_server.requests] == ["chat-model"]
    assert result.details["model_overrides"] == {
        "refund": {"model": "jev-latest", "applied": False, "sent_model": "chat-model"}}


async def test_a_question_model_reaches_the_reference_server():
    """Against a server that refuses the jev-latest alias, only the question asking for it fails."""
    task = Task(id="t", prompt="I was charged twice.", questions=[REFUND.model_copy(update={"model": "jev-latest"})])
    with jevcompat_mock(("reject-jev-latest",)) as url:
        decision = ProviderSettings(kind="systemone", base_url=url, model="mock", max_retries=0)
        config = _config(ProviderSettings(base_url=url), decision)
        refused = await _evaluate(config, task)
        other = await _evaluate(config, task.model_copy(update={"questions": [
            REFUND.model_copy(update={"model": "jev-preview"})]}))
    assert refused.status == Status.failed and "Model not served: jev-latest" in refused.error.message
    assert other.status == Status.ok, other.error
    with jevcompat_mock() as url:  # the alias itself is served by a conforming server
        decision = ProviderSettings(kind="systemone", base_url=url, model="mock", max_retries=0)
        clean = await _evaluate(_config(ProviderSettings(base_url=url), decision), task)
    assert clean.status == Status.ok, clean.error
    assert clean.provenance.calls[0].model_requested == "jev-latest"


async def test_min_confidence_reads_the_reference_formula_on_a_logprob_readout(scripted_server):
    """P(yes) = 0.75: top probability 0.75 would clear min_confidence 0.6; the spec's |2p - 1| = 0.5 does not."""
    top = {"Yes": math.log(0.6), "No": math.log(0.2)}
    scripted_server.push(chat_reply("Yes", logprobs=[("Yes", top["Yes"], top)], completion_tokens=1))
    task = Task(id="t", prompt="p", questions=[REFUND.model_copy(update={"min_confidence": 0.6})])
    result = await _evaluate(_config(scripted_server.provider_settings()), task)
    q = _by_id(result)["refund"]
    assert q["probabilities"]["yes"] == pytest.approx(0.75) and q["confidence"] == pytest.approx(0.5)
    assert q["low_confidence"] and q["low_confidence_reasons"] == ["below_min_confidence"]
    [low] = result.concerns
    assert low.kind == "decision_low_confidence" and low.evidence.confidence == {"r1": pytest.approx(0.5)}
    assert result.candidates[0].score == 1.0  # flagged for review, the score unchanged
