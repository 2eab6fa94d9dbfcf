"""The decision judge end to end over real HTTP against the scripted wire-protocol server."""

from __future__ import annotations

import json
import math

import pytest

from oracle.config.model import DecisionJudgeConfig, OracleConfig, ProvidersConfig
from oracle.tasks.questions import Question, QuestionInputs
from oracle.results.result import Status
from oracle._evaluators import evaluator_factory
from oracle.strategies.protocol import EvaluationContext
from oracle.tasks.task import Criterion, Task, Trajectory
from oracle.strategies.decision_judge.readout import PROMPT_TEMPLATE_HASH
from oracle.strategies.decision_judge.strategy import DecisionJudge
from tests.plugins.scripted_server import Reply, chat_reply, decision_handler, status_reply

WIRE_FORMATS = ["systemone", "decisions"]


def _config(server, *, native: str | None = None, **judge) -> OracleConfig:
    decision = server.provider_settings(kind=native, model="scripted-decider") if native else None
    return OracleConfig(providers=ProvidersConfig(judge=server.provider_settings(kind="openai"),
                                                  decision=decision),
                        decision_judge=DecisionJudgeConfig(**judge))


async def _evaluate(config: OracleConfig, task: Task, *cands: Trajectory):
    judge = evaluator_factory("decision_judge")()
    ctx = EvaluationContext(task=task, trajectories=tuple(cands), config=config)
    return await judge.evaluate(ctx)


def _kinds(result) -> list[str]:
    return [c.kind for c in result.concerns]


def _sent_state(request) -> dict:
    body = request.json
    return body["state"] if "state" in body else json.loads(body["input"])


CAND = Trajectory(id="c1", answer="Sorry about that! Could you send me your order number?",
                  code="secret()", metadata={"agent": "x"})


# --- validation: rejected before any request ------------------------------------------------------

def _construct_question(**fields) -> Question:
    return Question.model_construct(**{"instructions": "x", "inputs": QuestionInputs(), **fields})


BAD_TASKS = {
    "unknown parameter": (Task.model_construct(id="t", prompt="p", criteria=[], questions=[
        {"id": "q", "type": "likelihood", "instructions": "x", "temperature": 0.3}]), "temperature"),
    "fewer than two options": (Task.model_construct(id="t", prompt="p", criteria=[], questions=[
        _construct_question(id="q", type="choice", options={"a": "A"}, scores={"a": 3})]), "options"),
    "score outside 1..5": (Task.model_construct(id="t", prompt="p", criteria=[], questions=[
        _construct_question(id="q", type="choice", options={"a": "", "b": ""}, scores={"a": 3, "b": 7})]),
        "scores"),
    "missing score": (Task.model_construct(id="t", prompt="p", criteria=[], questions=[
        _construct_question(id="q", type="choice", options={"a": "", "b": ""}, scores={"a": 3})]),
        "missing a score"),
    "score name not an option": (Task.model_construct(id="t", prompt="p", criteria=[], questions=[
        _construct_question(id="q", type="score", levels=["lo", "hi"], scores={"lo": 1, "mid": 3})]),
        "not among the options"),
    "all weights 0": (Task.model_construct(id="t", prompt="p", questions=[], criteria=[
        Criterion(criterion="a", weight=0), Criterion(criterion="b", weight=0)]), "weight"),
}


@pytest.mark.parametrize("case", sorted(BAD_TASKS))
@pytest.mark.parametrize("native", [None, "systemone"])
async def test_validation_rejects_before_any_request(scripted_server, case, native):
    task, needle = BAD_TASKS[case]
    result = await _evaluate(_config(scripted_server, native=native), task, CAND)
    assert result.status == Status.failed
    assert result.error.type == "TaskValidationError"
    assert "task." in result.error.message and needle in result.error.message
    assert result.calls == 0
    assert scripted_server.requests == []


def test_the_same_rejections_happen_when_a_task_is_loaded():
    from oracle.errors import TaskValidationError as ValidationError  # our own error, naming the field
    with pytest.raises(ValidationError, match="temperature"):
        Task.model_validate({"id": "t", "prompt": "p", "questions": [
            {"id": "q", "type": "likelihood", "instructions": "x", "temperature": 0.3}]})
    with pytest.raises(ValidationError, match="criteria"):
        Task.model_validate({"id": "t", "prompt": "p", "criteria": [{"criterion": "a", "weight": 0}]})


# --- criteria mode: pass rule and weighting, both wire formats --------------------------------------

CRITERIA_TASK = Task(id="t", prompt="Customer: I was charged twice.", criteria=[
    Criterion(criterion="asks for the order number", weight=1),
    Criterion(criterion="apologizes", weight=3),
    Criterion(criterion="does not blame the customer", weight=0)])


@pytest.mark.parametrize("wire", WIRE_FORMATS)
async def test_criteria_pass_rule_and_weighting_from_fixed_probabilities(scripted_server, wire):
    scripted_server.set_handler(decision_handler(probabilities={
        "criterion_0": 0.9, "criterion_1": 0.6, "criterion_2": 0.55}))
    result = await _evaluate(_config(scripted_server, native=wire), CRITERIA_TASK, CAND)
    assert result.status == Status.ok, result.error
    (cand,) = result.candidates
    assert cand.passed is True
    assert cand.score == pytest.approx((0.9 + 3 * 0.6) / 4)
    assert [c["probability"] for c in cand.details["criteria"]] == pytest.approx([0.9, 0.6, 0.55])
    # all criteria in ONE call, and only prompt + answer were sent
    assert len(scripted_server.requests) == 1 and result.calls == 1
    assert _sent_state(scripted_server.requests[0]) == {"prompt": CRITERIA_TASK.prompt,
                                                        "response": CAND.answer}
    assert result.details["threshold"]["source"] == "default"
    assert result.details["pass_threshold"] == 0.5
    prov = result.provenance
    assert [c.call_id for c in prov.calls] == ["dec_scripted"]
    assert prov.model_requested == "scripted-decider" and prov.decision_backend == "native"
    assert prov.probability_sources == ["native_decision"] and prov.calls[0].endpoint_kind == wire
    assert prov.cost_usd is None  # no price configured: unknown, never 0
    assert json.loads(result.model_dump_json())["provenance"]["cost_usd"] is None  # kept in JSON
    assert result.cost_usd is None and result.latency_ms > 0


@pytest.mark.parametrize("wire", WIRE_FORMATS)
async def test_one_criterion_below_threshold_fails_even_with_weight_zero(scripted_server, wire):
    scripted_server.set_handler(decision_handler(probabilities={
        "criterion_0": 0.9, "criterion_1": 0.95, "criterion_2": 0.2}))
    result = await _evaluate(_config(scripted_server, native=wire), CRITERIA_TASK, CAND)
    (cand,) = result.candidates
    assert cand.passed is False
    assert cand.score == pytest.approx((0.9 + 3 * 0.95) / 4)
    assert [c["met"] for c in cand.details["criteria"]] == [True, True, False]


async def test_calibrated_threshold_and_file_hash(scripted_server, tmp_path):
    from oracle.config.calibration import CalibrationFile, ModelCalibration, write_calibration
    path = tmp_path / "cal.json"
    sha = write_calibration(path, CalibrationFile(models={"scripted-decider": ModelCalibration(
        pass_threshold=0.95, evidence={"n": 40, "dataset": "unit test"})}))
    scripted_server.set_handler(decision_handler(probabilities={
        "criterion_0": 0.9, "criterion_1": 0.96, "criterion_2": 0.97}))
    result = await _evaluate(_config(scripted_server, native="systemone", calibration_file=str(path)),
                             CRITERIA_TASK, CAND)
    assert result.candidates[0].passed is False  # 0.9 < calibrated 0.95 (would pass at 0.5)
    info = result.details["threshold"]
    assert (info["source"], info["pass_threshold"], info["calibration_sha256"]) == (
        "calibration_file", 0.95, sha)


async def test_broken_calibration_file_fails_before_any_request(scripted_server, tmp_path):
    path = tmp_path / "cal.json"
    path.write_text('{"models": {"m": {"pass_threshold": 2}}}')
    result = await _evaluate(_config(scripted_server, native="systemone", calibration_file=str(path)),
                             CRITERIA_TASK, CAND)
    assert result.status == Status.failed and "pass_threshold" in result.error.message
    assert scripted_server.requests == []


# --- question mode --------------------------------------------------------------------------------

ORDER_Q = Question(id="order_number", type="likelihood", instructions="Did the reply ask for the order number?")
TEAM_Q = Question(id="team", type="choice", instructions="Which team should handle it?",
                  options={"billing": "payments", "technical": "bugs", "unsure": "cannot tell"},
                  scores={"billing": 5, "technical": 1}, abstain_option="unsure",
                  inputs=QuestionInputs(task=["prompt", "description"], candidate=["answer"]))
POLITE_Q = Question(id="politeness", type="score", instructions="How polite is the reply?",
                    levels=["rude", "neutral", "polite"], min_confidence=0.7,
                    inputs=QuestionInputs(task=[], candidate=["answer"]))
QUESTION_TASK = Task(id="t", prompt="I was charged twice.", description="billing ticket",
                     reference="ask for order number", questions=[ORDER_Q, TEAM_Q, POLITE_Q])


@pytest.mark.parametrize("wire", WIRE_FORMATS)
async def test_question_mode_most_likely_option_sets_score_and_low_confidence_flags(scripted_server, wire):
    scripted_server.set_handler(decision_handler(probabilities={
        "order_number": 0.8, "team": {"billing": 0.7, "technical": 0.2, "unsure": 0.1},
        "politeness": {"rude": 0.1, "neutral": 0.3, "polite": 0.6}}, confidence=0.6))
    result = await _evaluate(_config(scripted_server, native=wire), QUESTION_TASK, CAND)
    assert result.status == Status.ok, result.error
    (cand,) = result.candidates
    by_id = {q["question_id"]: q for q in cand.details["questions"]}
    assert (by_id["order_number"]["selected"], by_id["order_number"]["score"]) == ("yes", 1.0)
    assert (by_id["team"]["selected"], by_id["team"]["score"]) == ("billing", 1.0)
    assert (by_id["politeness"]["selected"], by_id["politeness"]["score"]) == ("polite", 1.0)
    assert by_id["politeness"]["expected_score"] == pytest.approx(0.1 + 0.9 + 3.0)
    assert by_id["team"]["option_order"] == ["billing", "technical", "unsure"]
    assert cand.score == 1.0 and cand.passed is True
    # confidence 0.6 < min_confidence 0.7: flagged for review, score unchanged
    assert by_id["politeness"]["low_confidence"] and not by_id["team"]["low_confidence"]
    assert result.details["low_confidence"] is True
    assert _kinds(result) == ["decision_low_confidence"]
    [low] = result.concerns
    assert low.candidates == [CAND.id] and low.evidence.questions == {CAND.id: ["politeness"]}
    # our confidence (oracle/providers/decisions.reference_confidence, score distance formula):
    # [0.1, 0.3, 0.6] -> 1 - (0.1*2 + 0.3*1) / (2/3) = 0.25; the server's 0.6 is server_confidence
    assert low.evidence.confidence[CAND.id] == pytest.approx(0.25)
    # three different field sets -> three calls, each with only its fields
    states = sorted((_sent_state(r) for r in scripted_server.requests), key=len)
    assert states == [{"response": CAND.answer}, {"prompt": QUESTION_TASK.prompt, "response": CAND.answer},
                      {"prompt": QUESTION_TASK.prompt, "description": "billing ticket",
                       "response": CAND.answer}]


@pytest.mark.parametrize("wire", WIRE_FORMATS)
async def test_abstention_is_not_a_score(scripted_server, wire):
    task = Task(id="t", prompt="p", questions=[TEAM_Q.model_copy(update={"inputs": QuestionInputs()})])
    scripted_server.set_handler(decision_handler(probabilities={
        "team": {"billing": 0.1, "technical": 0.2, "unsure": 0.7}}))
    result = await _evaluate(_config(scripted_server, native=wire), task, CAND)
    (cand,) = result.candidates
    assert (cand.status, cand.score, cand.passed) == (Status.abstained, None, None)
    assert result.status == Status.abstained and result.ranking == [] and result.best == []
    assert result.details["abstained"] is True
    [abstained] = result.concerns
    assert abstained.kind == "decision_abstention" and abstained.evidence.questions == {CAND.id: ["team"]}


@pytest.mark.parametrize("wire", WIRE_FORMATS)
async def test_refusal_is_recorded_and_asks_for_escalation(scripted_server, wire):
    scripted_server.set_handler(decision_handler(
        probabilities={"order_number": 0.9}, refuse={"team": "cannot route tickets"}))
    task = Task(id="t", prompt="p", questions=[ORDER_Q, TEAM_Q.model_copy(update={"inputs": QuestionInputs()})])
    result = await _evaluate(_config(scripted_server, native=wire), task, CAND)
    (cand,) = result.candidates
    assert cand.details["refused"] and cand.details["refusal_reasons"] == {"team": "cannot route tickets"}
    assert cand.score == 1.0  # the answered question still counts; the refused one is left out
    assert result.details["refused"] is True and "decision_refusal" in _kinds(result)
    refusal = result.concerns[0]
    assert refusal.evidence.reasons == ["cannot route tickets"] and refusal.evidence.questions == {CAND.id: ["team"]}


# --- several candidates compared, when the task asks for it: both orders ------------------------------

def _compare(*ids: str) -> Question:
    """A comparison question: a choice whose options are exactly the trajectory ids."""
    return Question(id="best_response", type="choice", instructions="Which reply best asks for the order number?",
                    options={i: "" for i in ids})


def _position_biased(first_p: float):
    """A decider that prefers whichever option comes first (systemone format)."""
    def handle(request):
        q = request.json["questions"]["best_response"]
        labels = list(q["criteria"])
        probs = {lab: (first_p if i == 0 else (1 - first_p) / (len(labels) - 1)) for i, lab in enumerate(labels)}
        return decision_handler(probabilities={"best_response": probs})(request)
    return handle


async def test_order_reversal_records_a_flip_and_lowers_confidence(scripted_server):
    scripted_server.set_handler(_position_biased(0.8))
    task = Task(id="t", prompt="Reply to the customer", questions=[_compare("a", "b")])
    a, b = Trajectory(id="a", answer="Order number please?"), Trajectory(id="b", answer="Go away")
    result = await _evaluate(_config(scripted_server, native="systemone"), task, a, b)
    assert result.details["mode"] == "comparison"
    assert len(scripted_server.requests) == 2
    sent = [r.json["questions"]["best_response"]["criteria"] for r in scripted_server.requests]
    assert sorted(list(c) for c in sent) == [["a", "b"], ["b", "a"]]
    assert {c["a"] for c in sent} == {"Order number please?"}  # each option carries its candidate
    assert result.details["order_flip"] is True and "decision_order_flip" in _kinds(result)
    flip = next(c for c in result.concerns if c.kind == "decision_order_flip")
    assert sorted(flip.candidates) == ["a", "b"] and flip.evidence.winners_by_order in (["a", "b"], ["b", "a"])
    assert result.details["probabilities"] == pytest.approx({"a": 0.5, "b": 0.5})
    assert result.details["confidence"] == pytest.approx(0.2)
    assert result.details["low_confidence"] is True
    assert result.best == ["a", "b"]  # cannot be separated


async def test_consistent_preference_across_orders_has_no_flip(scripted_server):
    def prefer_a(request):
        return decision_handler(probabilities={"best_response": {"a": 0.9, "b": 0.1}})(request)
    scripted_server.set_handler(prefer_a)
    task = Task(id="t", prompt="Reply to the customer", questions=[_compare("b", "a")])
    a, b = Trajectory(id="a", answer="Order number please?"), Trajectory(id="b", answer="Go away")
    result = await _evaluate(_config(scripted_server, native="decisions"), task, a, b)
    assert result.details["order_flip"] is False and result.concerns == []
    assert result.best == ["a"] and result.ranking == ["a", "b"]
    assert result.candidate("a").score == pytest.approx(0.9) and result.candidate("a").passed is None


# --- logprob readout and sampling on a chat endpoint -------------------------------------------------

def _readout(top: dict[str, float], token: str | None = None) -> Reply:
    token = token or max(top, key=top.__getitem__)
    return chat_reply(token, logprobs=[(token, top[token], top)], completion_tokens=1)


async def test_logprob_readout_on_a_chat_endpoint(scripted_server):
    scripted_server.push(_readout({"Yes": math.log(0.6), "No": math.log(0.2), "The": math.log(0.2)}))
    task = Task(id="t", prompt="p", criteria=["asks for the order number"])
    result = await _evaluate(_config(scripted_server), task, CAND)
    assert result.status == Status.ok and result.details["backend"] == "logprob_readout"
    (req,) = scripted_server.requests
    assert (req.json["max_tokens"], req.json["logprobs"], req.json["top_logprobs"]) == (1, True, 20)
    row = result.candidates[0].details["criteria"][0]
    assert row["probability"] == pytest.approx(0.75) and row["covered_mass"] == pytest.approx(0.8)
    assert row["probability_source"] == "logprob_readout"
    assert result.provenance.prompt_template_hash == PROMPT_TEMPLATE_HASH
    assert result.provenance.calls[0].prompt_template_hash == PROMPT_TEMPLATE_HASH
    assert result.candidates[0].passed is True


async def test_covered_mass_below_the_floor_is_unparsed_never_a_verdict(scripted_server):
    # 99.99 % on "I": the crumbs on Yes/No must not be renormalized into P(yes) = 1.0
    scripted_server.push(_readout({"I": math.log(0.9999), "Yes": math.log(0.0001)}))
    task = Task(id="t", prompt="p", criteria=["asks for the order number"])
    result = await _evaluate(_config(scripted_server, coverage_floor=0.5), task, CAND)
    assert result.status == Status.unparsed
    cand = result.candidates[0]
    assert cand.score is None and cand.passed is None
    bad = cand.details["unparsed_questions"]["criterion_0"]
    assert bad["covered_mass"] == pytest.approx(0.0001) and "coverage_floor" in bad["reason"]
    scripted_server.push(_readout({"The": math.log(0.7), "Yes": math.log(0.2), "No": math.log(0.1)}))
    result = await _evaluate(_config(scripted_server, coverage_floor=0.5), task, CAND)
    assert result.status == Status.unparsed  # 0.3 covered: below the floor too
    scripted_server.push(_readout({"The": math.log(0.7), "Yes": math.log(0.2), "No": math.log(0.1)}))
    result = await _evaluate(_config(scripted_server, coverage_floor=0.25), task, CAND)
    assert result.status == Status.ok and result.candidates[0].score == pytest.approx(2 / 3)
    scripted_server.push(_readout({"The": -0.1, "I": -3.0}))
    result = await _evaluate(_config(scripted_server), task, CAND)
    assert result.status == Status.unparsed and result.candidates[0].score is None
    assert result.candidates[0].details["unparsed_questions"]["criterion_0"]["raw_text"] == "The"


async def test_below_the_floor_falls_back_to_sampling_only_when_configured(scripted_server):
    task = Task(id="t", prompt="p", criteria=["asks for the order number"])
    noise = _readout({"I": math.log(0.9999), "Yes": math.log(0.0001)})
    scripted_server.push(noise, *(chat_reply(t) for t in ["Yes", "yes.", "No", "Yes", "Yes"]))
    result = await _evaluate(_config(scripted_server, low_coverage="sample", samples=5), task, CAND)
    assert result.status == Status.ok and len(scripted_server.requests) == 6 and result.calls == 6
    row = result.candidates[0].details["criteria"][0]
    assert row["probability_source"] == "sampled" and row["probability"] == pytest.approx(0.8)
    assert result.provenance.probability_sources == ["logprob_readout", "sampled"]
    assert [c.probability_source for c in result.provenance.calls] == ["logprob_readout"] + ["sampled"] * 5
    # the samples are held to the same floor: mostly off-label samples are unparsed too
    scripted_server.push(noise, *(chat_reply(t) for t in ["I", "I think", "Well", "Yes", "Hmm"]))
    result = await _evaluate(_config(scripted_server, low_coverage="sample", samples=5), task, CAND)
    assert result.status == Status.unparsed


async def test_an_exact_tie_passes_by_the_rule_but_asks_a_human(scripted_server):
    scripted_server.push(_readout({"Yes": math.log(0.5), "No": math.log(0.5)}, token="Yes"))
    task = Task(id="t", prompt="p", criteria=["asks for the order number"])
    result = await _evaluate(_config(scripted_server), task, CAND)
    cand = result.candidates[0]
    assert result.status == Status.ok and cand.passed is True and cand.score == pytest.approx(0.5)
    assert result.details["low_confidence"] is True and _kinds(result) == ["decision_low_confidence"]
    assert cand.details["criteria"][0]["low_confidence"] is True
    from oracle.config.model import EscalationConfig
    from oracle.escalation._triggers import check_result
    from oracle._oracle import Oracle
    request = check_result(task, Oracle().route(task, [CAND]), result, EscalationConfig(), [CAND.id])
    assert request is not None and request.reason == "decision_low_confidence"


async def test_sampling_backend_counts_k_samples(scripted_server):
    scripted_server.push(*(chat_reply(t) for t in ["Yes", "yes.", "No", "Yes", "Maybe"]))
    task = Task(id="t", prompt="p", criteria=["asks for the order number"])
    result = await _evaluate(_config(scripted_server, backend="sampled", samples=5, sample_temperature=0.7),
                             task, CAND)
    assert len(scripted_server.requests) == 5 and result.calls == 5
    assert all(r.json["temperature"] == 0.7 and "logprobs" not in r.json for r in scripted_server.requests)
    row = result.candidates[0].details["criteria"][0]
    assert row["probability_source"] == "sampled"
    assert row["probability"] == pytest.approx(0.75) and row["covered_mass"] == pytest.approx(0.8)


# --- faults: never raise, never a midpoint ----------------------------------------------------------

async def test_server_error_gives_a_failed_result_with_the_message(scripted_server):
    scripted_server.set_handler(lambda r: status_reply(500, message="decider down"))
    result = await _evaluate(_config(scripted_server, native="systemone"), CRITERIA_TASK, CAND)
    assert result.status == Status.failed and result.candidates == []
    assert result.error.type == "ProviderHTTPError" and "500" in result.error.message


async def test_timeout_per_call_gives_a_failed_result(scripted_server):
    scripted_server.push(Reply(delay_s=1.5, json={}))
    result = await _evaluate(_config(scripted_server, native="systemone", timeout_s=0.3), CRITERIA_TASK, CAND)
    assert result.status == Status.failed and result.error.type == "ProviderTimeout"
    assert "0.3 s" in result.error.message


async def test_native_backend_without_a_decision_endpoint_is_a_config_failure(scripted_server):
    result = await _evaluate(_config(scripted_server, backend="native"), CRITERIA_TASK, CAND)
    assert result.status == Status.failed and result.error.type == "ConfigError"
    assert scripted_server.requests == []


def test_spec_names_non_default_settings():
    judge = DecisionJudge()
    config = OracleConfig(decision_judge=DecisionJudgeConfig(samples=3))
    assert judge.spec(config) == {"name": "decision_judge", "version": judge.version, "samples": 3}


@pytest.mark.parametrize("wire", WIRE_FORMATS)
async def test_a_refused_criterion_leaves_the_candidate_unscored(scripted_server, wire):
    scripted_server.set_handler(decision_handler(
        probabilities={"criterion_0": 0.9, "criterion_2": 0.9}, refuse={"criterion_1": "no opinion"}))
    result = await _evaluate(_config(scripted_server, native=wire), CRITERIA_TASK, CAND)
    (cand,) = result.candidates
    assert (cand.status, cand.score, cand.passed) == (Status.abstained, None, None)
    assert cand.details["criteria"][1]["refused"] and cand.details["criteria"][1]["probability"] is None
    assert result.status == Status.abstained
    assert result.details["refused"] is True
    assert _kinds(result) == ["decision_refusal", "decision_abstention"]
