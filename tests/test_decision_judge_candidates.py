"""Several candidates judged on weighted criteria: the pass rule per candidate, and what it costs.

Real HTTP to the scripted wire-protocol server. The server answers from what it is sent (the
candidate's response and the criterion asked), so each assertion about a candidate's probabilities
also checks that the right candidate went with the right question. Call counts are what the server
saw, not what the judge says it made.
"""

from __future__ import annotations

import json
import math
import re

import pytest

from oracle.config.model import DecisionJudgeConfig, EscalationConfig, OracleConfig, ProvidersConfig
from oracle.escalation._triggers import check_result
from oracle._oracle import Oracle
from oracle.results.result import Status
from oracle._evaluators import evaluator_factory
from oracle.strategies.protocol import EvaluationContext
from oracle.tasks.task import Criterion, Task, Trajectory
from tests.plugins.scripted_server import RecordedRequest, chat_reply, decision_handler

CRITERIA = [Criterion(criterion="asks for the order number", weight=1),
            Criterion(criterion="apologizes", weight=3),
            Criterion(criterion="does not blame the customer", weight=0)]
TASK = Task(id="refund", prompt="Customer: I was charged twice for one order.", criteria=CRITERIA)
CANDIDATES = (Trajectory(id="curt", answer="Order number?"),
              Trajectory(id="kind", answer="So sorry! Could you send the order number?"),
              Trajectory(id="blames", answer="Sorry, but you clicked twice. Order number?"))
# P(yes) per candidate and criterion (criterion_0..2 = order number, apologizes, no blame)
P_YES = {"Order number?": [0.9, 0.2, 0.9],
         "So sorry! Could you send the order number?": [0.8, 0.9, 0.95],
         "Sorry, but you clicked twice. Order number?": [0.95, 0.97, 0.1]}


def _config(server, *, native: str | None = None, **judge) -> OracleConfig:
    decision = server.provider_settings(kind=native, model="scripted-decider") if native else None
    return OracleConfig(providers=ProvidersConfig(judge=server.provider_settings(kind="openai"), decision=decision),
                        decision_judge=DecisionJudgeConfig(**judge))


async def _evaluate(config: OracleConfig, task: Task, cands=CANDIDATES):
    judge = evaluator_factory("decision_judge")()
    return await judge.evaluate(EvaluationContext(task=task, trajectories=tuple(cands), config=config))


def _native_by_response(table: dict[str, list[float]]):
    """A decision server whose answer depends on the response in the state it is sent."""
    def handle(request: RecordedRequest):
        body = request.json
        state = body["state"] if "state" in body else json.loads(body["input"])
        p = table[state["response"]]
        return decision_handler(probabilities={f"criterion_{i}": v for i, v in enumerate(p)})(request)
    return handle


def _readout_by_response(table: dict[str, list[float]]):
    """A chat server answering a Yes/No readout from the response and the criterion in the prompt."""
    def handle(request: RecordedRequest):
        text = request.json["messages"][-1]["content"]
        response = re.search(r'<field id="response" boundary="(\w+)">\n(.*?)\n'
                             r'</field boundary="\1">', text, re.S).group(2)
        criterion = re.search(r"The response satisfies: (.*)\n", text).group(1)
        p = table[response][[c.criterion for c in CRITERIA].index(criterion)]
        top = {"Yes": math.log(p), "No": math.log(1 - p)}
        token = "Yes" if p >= 0.5 else "No"
        return chat_reply(token, logprobs=[(token, top[token], top)], completion_tokens=1)
    return handle


def _weighted(p: list[float]) -> float:
    return (1 * p[0] + 3 * p[1]) / 4  # weight 0 counts in the pass rule only


def _check_verdicts(result) -> None:
    assert result.status == Status.ok, result.error
    assert result.details["mode"] == "criteria"
    for cand in CANDIDATES:
        got = result.candidate(cand.id)
        p = P_YES[cand.answer]
        assert [row["probability"] for row in got.details["criteria"]] == pytest.approx(p)
        assert [row["weight"] for row in got.details["criteria"]] == [1, 3, 0]
        assert got.score == pytest.approx(_weighted(p))
        assert got.passed is all(x >= 0.5 for x in p)
    # curt fails "apologizes", blames fails the weight-0 "no blame" (yet scores highest): only kind passes
    assert [result.candidate(i).passed for i in ("curt", "kind", "blames")] == [False, True, False]
    assert result.candidate("blames").score > result.candidate("kind").score
    assert result.best == ["kind"]
    assert result.ranking == ["blames", "kind", "curt"]  # the ranking follows the scores
    assert result.details["none_passed"] is False


@pytest.mark.parametrize("wire", ["systemone", "decisions"])
async def test_native_endpoint_one_call_per_candidate_with_all_its_criteria(scripted_server, wire):
    scripted_server.set_handler(_native_by_response(P_YES))
    result = await _evaluate(_config(scripted_server, native=wire), TASK)
    _check_verdicts(result)
    assert len(scripted_server.requests) == 3 == result.calls
    for request in scripted_server.requests:
        body = request.json
        asked = list(body["questions"]) if wire == "systemone" else [q["name"] for q in body["questions"]]
        assert asked == ["criterion_0", "criterion_1", "criterion_2"]


async def test_logprob_readout_at_most_one_call_per_candidate_and_criterion(scripted_server):
    scripted_server.set_handler(_readout_by_response(P_YES))
    result = await _evaluate(_config(scripted_server), TASK)
    _check_verdicts(result)
    assert result.details["backend"] == "logprob_readout"
    assert len(scripted_server.requests) == 9 == result.calls  # 3 candidates x 3 criteria
    assert all(r.path.endswith("/chat/completions") and r.json["max_tokens"] == 1 for r in scripted_server.requests)


async def test_when_no_candidate_passes_best_is_empty_and_the_result_says_so(scripted_server):
    failing = {answer: [p[0], 0.3, p[2]] for answer, p in P_YES.items()}  # nobody apologizes enough
    scripted_server.set_handler(_native_by_response(failing))
    result = await _evaluate(_config(scripted_server, native="systemone"), TASK)
    assert result.status == Status.ok  # a verdict, not a fault
    assert [c.passed for c in result.candidates] == [False, False, False]
    assert result.best == [] and result.details["none_passed"] is True
    assert len(result.ranking) == 3 and "no candidate passed" in result.explanation
    [concern] = result.concerns
    assert concern.kind == "no_candidate_passed" and concern.evidence.mode == "criteria"
    assert concern.evidence.first_failures["kind"] == "criterion 'apologizes': P(yes) 0.30 < 0.5"
    # the two closest failures are not "two good answers to choose between"
    request = check_result(TASK, Oracle().route(TASK, list(CANDIDATES)), result, EscalationConfig(),
                           [c.id for c in CANDIDATES])
    assert request is not None and request.reason == "inseparable_candidates"
    assert "No candidate of task 'refund' passed the decision_judge's criteria" in request.question
    assert request.options == ["blames", "curt", "none"]


async def test_the_pass_rule_separates_a_close_failing_candidate_from_the_passing_one(scripted_server):
    close = {**P_YES, "Sorry, but you clicked twice. Order number?": [0.86, 0.9, 0.1]}  # 0.89 vs kind's 0.875
    scripted_server.set_handler(_native_by_response(close))
    result = await _evaluate(_config(scripted_server, native="systemone"), TASK)
    assert result.best == ["kind"] and result.ranking[:2] == ["blames", "kind"]
    assert result.concerns == []  # blames scores near kind but fails: no "which is better?" request
    assert check_result(TASK, Oracle().route(TASK, list(CANDIDATES)), result, EscalationConfig(),
                        [c.id for c in CANDIDATES]) is None


async def test_equal_passing_scores_share_best(scripted_server):
    same = {answer: [0.8, 0.9, 0.9] for answer in P_YES}
    scripted_server.set_handler(_native_by_response(same))
    result = await _evaluate(_config(scripted_server, native="systemone"), TASK)
    assert result.best == ["curt", "kind", "blames"] and all(c.passed for c in result.candidates)


async def test_a_calibrated_threshold_applies_to_every_candidate(scripted_server):
    scripted_server.set_handler(_native_by_response(P_YES))
    result = await _evaluate(_config(scripted_server, native="systemone", pass_threshold=0.85), TASK)
    # at 0.85 kind's 0.8 on the order number fails too; blames still fails its weight-0 criterion
    assert [c.passed for c in result.candidates] == [False, False, False] and result.best == []
