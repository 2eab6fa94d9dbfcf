"""One candidate never fails the task (judges): a provider error caused by one candidate's call
fails that candidate (or that pair) alone, with the reason; the others are still judged. Real HTTP
against the scripted wire-protocol server, which answers 400 to that candidate's requests only."""

from __future__ import annotations

import json
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from oracle.config.model import DecisionJudgeConfig, OracleConfig, ProvidersConfig
from oracle.tasks.questions import Question
from oracle.results.result import Status
from oracle.strategies.protocol import EvaluationContext
from oracle.tasks.task import Criterion, Task, Trajectory
from oracle.strategies.decision_judge.strategy import DecisionJudge
from oracle.strategies._judging.faults import caused_by_candidate
from oracle.strategies.llm_judge.strategy import ESCALATION_KEYS, LLMJudge
from oracle.errors import ProviderError, ProviderHTTPError, ProviderTimeout, RateLimited, ResponseParseError
from tests.plugins.scripted_server import RecordedRequest, Reply, chat_reply, decision_handler, status_reply
from tests.profiles import examples
from tests.test_llm_judge import pairwise_reply, pointwise_json, seats

HOSTILE = "HOSTILE-ANSWER " * 50
TOO_LONG = "This model's maximum context length is 8192 tokens; your messages resulted in 91234 tokens"
TASK = Task(id="t", prompt="Explain why the sky is blue.", criteria=["Correct", "Clear"])


def hostile_in(req: RecordedRequest) -> bool:
    return b"HOSTILE-ANSWER" in req.body


def refusing(answer):
    """A server that refuses (400, the input is too long) every request carrying the hostile text."""
    def handler(req: RecordedRequest) -> Reply:
        return status_reply(400, message=TOO_LONG) if hostile_in(req) else answer(req)
    return handler


def llm_config(server, **judge) -> OracleConfig:
    judge.setdefault("logprobs", False)
    return OracleConfig(providers={"judge": server.provider_settings()}, llm_judge=judge)


async def llm(cfg: OracleConfig, task: Task, answers: dict[str, str]):
    trajectories = tuple(Trajectory(id=i, answer=a) for i, a in answers.items())
    return await LLMJudge().evaluate(EvaluationContext(task=task, trajectories=trajectories, config=cfg))


def pointwise_by_answer(req: RecordedRequest) -> Reply:
    """Scores follow the content: 'good' answers get 9, others 4."""
    text = [m["content"] for m in req.json["messages"] if m["role"] == "user"][0]
    score = 9 if "good answer" in text else 4
    return chat_reply(pointwise_json({"c1": score, "c2": score}))


def prefer_good(req: RecordedRequest) -> Reply:
    a, b = seats(req)
    rank = lambda s: 0 if "good" in s else 1 if "fine" in s else 2  # noqa: E731
    return chat_reply(pairwise_reply("A" if rank(a) <= rank(b) else "B"))


# ---------------------------------------------------------------- which faults are the candidate's

@pytest.mark.parametrize("exc,theirs", [
    (ProviderHTTPError("HTTP 400: context length", status=400), True),
    (ProviderHTTPError("HTTP 413", status=413), True),
    (ProviderHTTPError("HTTP 422", status=422), True),
    (ProviderHTTPError("HTTP 500", status=500), True),
    (ProviderHTTPError("HTTP 503", status=503), True),
    (ProviderHTTPError("HTTP 401", status=401), False),
    (ProviderHTTPError("HTTP 404", status=404), False),
    (RateLimited("429", status=429), False),
    (ProviderTimeout("slow"), False),
    (ProviderError("connection failed"), False),
    (ResponseParseError("not JSON"), False),
    (UnicodeEncodeError("utf-8", "\ud800", 0, 1, "surrogates not allowed"), True),
    (RecursionError("too deep"), True),
])
def test_which_faults_are_the_candidates(exc, theirs):
    assert caused_by_candidate(exc) is theirs


# ---------------------------------------------------------------- LLM judge

async def test_pointwise_a_400_for_one_candidate_fails_it_alone(scripted_server):
    scripted_server.set_handler(refusing(pointwise_by_answer))
    cfg = llm_config(scripted_server, mode="pointwise")
    result = await llm(cfg, TASK, {"good": "a good answer", "bad": HOSTILE, "meh": "a plain answer"})
    assert result.status is Status.ok
    assert result.best == ["good"] and result.ranking == ["good", "meh"]
    bad = result.candidate("bad")
    assert bad.status is Status.failed and bad.score is None and bad.passed is None
    assert bad.details["error"]["type"] == "ProviderHTTPError" and bad.details["error"]["status"] == 400
    assert "maximum context length" in bad.details["error"]["message"]
    assert result.details["failed_candidates"] == ["bad"] and set(ESCALATION_KEYS) <= set(result.details)
    concern = next(c for c in result.concerns if c.kind == "candidate_unjudged")
    assert concern.candidates == ["bad"] and "maximum context length" in concern.evidence.errors["bad"].message
    assert sum(hostile_in(r) for r in scripted_server.requests) == 1  # a 400 is not retried
    assert result.provenance.failed_calls and result.provenance.failed_calls[0].error == "ProviderHTTPError"


async def test_pairwise_a_failed_pair_is_recorded_and_the_other_pairs_count(scripted_server):
    scripted_server.set_handler(refusing(prefer_good))
    cfg = llm_config(scripted_server, mode="pairwise")
    result = await llm(cfg, Task(id="pw", prompt="p"), {"g": "good", "h": HOSTILE, "f": "fine", "w": "weak"})
    assert result.status is Status.ok
    assert result.ranking[:3] == ["g", "f", "w"] and result.best == ["g"]
    assert sorted(map(sorted, result.details["failed_pairs"])) == [["f", "h"], ["g", "h"], ["h", "w"]]
    h = result.candidate("h")
    assert h.status is Status.failed and h.score is None and h.details["pairs_failed"] == 3
    assert h.details["error"]["status"] == 400
    for cid in ("g", "f", "w"):
        c = result.candidate(cid)
        assert c.status is Status.ok and c.details["pairs_failed"] == 1 and c.score is not None
    assert result.candidate("g").details["wins"] == 2 and result.candidate("w").details["losses"] == 2
    pair = next(p for p in result.details["pairs"] if {p["a"], p["b"]} == {"g", "h"})
    assert pair["failed"] is True and pair["error"]["type"] == "ProviderHTTPError"
    concern = next(c for c in result.concerns if c.kind == "candidate_unjudged")
    assert set(concern.candidates) >= {"h"} and len(concern.evidence.pairs) == 3
    assert not any(c.kind == "unparsed" for c in result.concerns)


async def test_pairwise_merge_sort_goes_on_past_a_failed_pair(scripted_server):
    scripted_server.set_handler(refusing(prefer_good))
    cfg = llm_config(scripted_server, mode="pairwise", all_pairs_max=2)
    result = await llm(cfg, Task(id="pw", prompt="p"), {"w": "weak", "h": HOSTILE, "f": "fine", "g": "good"})
    assert result.status is Status.ok and result.details["scheme"] == "merge_sort"
    # Which pairs a merge sort asks depends on its seeded first order; whatever it is, the failed
    # pairs are h's alone, h is failed and unranked, and the verdicts that were read still rank.
    assert result.candidate("h").status is Status.failed and "h" not in result.ranking
    assert result.details["failed_pairs"] and all("h" in p for p in result.details["failed_pairs"])
    assert result.best and "h" not in result.best
    read = [p for p in result.details["pairs"] if not p["failed"]]
    assert read and all(p["winner"] == min((p["a"], p["b"]), key="gfw".index) for p in read)


async def test_cascade_leaves_the_failed_candidate_out_of_the_close_group(scripted_server):
    scripted_server.set_handler(refusing(pointwise_by_answer))
    cfg = llm_config(scripted_server)  # auto: pointwise, then pairwise among the close ones
    result = await llm(cfg, TASK, {"a": "a good answer", "h": HOSTILE, "b": "a good answer too"})
    assert result.status is Status.ok and result.details["mode"] == "cascade"
    assert "h" not in result.details["close_group"] and result.candidate("h").status is Status.failed
    assert set(result.ranking) == {"a", "b"}


async def test_when_every_candidate_fails_on_its_input_the_evaluation_fails(scripted_server):
    scripted_server.set_handler(lambda req: status_reply(400, message=TOO_LONG))
    cfg = llm_config(scripted_server, mode="pointwise")
    result = await llm(cfg, TASK, {"a": "x", "b": "y"})
    assert result.status is Status.failed and result.error.type == "ProviderHTTPError"
    assert "400" in result.error.message and result.candidates == []


async def test_a_server_error_on_one_candidates_input_fails_that_candidate_alone(scripted_server):
    """An input that crashes the model server (a 5xx after the retries) must not sink the others."""
    scripted_server.set_handler(lambda req: status_reply(500) if hostile_in(req) else pointwise_by_answer(req))
    cfg = llm_config(scripted_server, mode="pointwise")
    result = await llm(cfg, TASK, {"a": "a good answer", "h": HOSTILE})
    assert result.status is Status.ok, result.error
    assert result.candidate("h").status is Status.failed and result.candidate("a").score is not None


async def test_a_server_down_for_everyone_still_fails_the_evaluation(scripted_server):
    scripted_server.set_handler(lambda req: status_reply(503))
    cfg = llm_config(scripted_server, mode="pointwise")
    result = await llm(cfg, TASK, {"a": "a good answer", "b": "another"})
    assert result.status is Status.failed and result.error.type == "ProviderHTTPError"


@pytest.mark.parametrize("answer", ["\ud800 lone surrogate", "x" * 200_000, "\x00\u202e\ufeff", "}" * 5000])
async def test_odd_candidate_text_sinks_no_one(scripted_server, answer):
    scripted_server.set_handler(pointwise_by_answer)
    cfg = llm_config(scripted_server, mode="pointwise")
    result = await llm(cfg, TASK, {"good": "a good answer", "odd": answer})
    assert result.status is Status.ok and result.best == ["good"]
    assert result.candidate("good").score == pytest.approx(8 / 9)
    assert result.candidate("odd").status in (Status.ok, Status.failed)


# ---------------------------------------------------------------- decision judge

def decision_config(server, **judge) -> OracleConfig:
    return OracleConfig(providers=ProvidersConfig(judge=server.provider_settings(kind="openai"),
                                                  decision=server.provider_settings(kind="systemone",
                                                                                    model="scripted-decider")),
                        decision_judge=DecisionJudgeConfig(**judge))


async def decide(cfg: OracleConfig, task: Task, *cands: Trajectory):
    return await DecisionJudge().evaluate(EvaluationContext(task=task, trajectories=tuple(cands), config=cfg))


CRITERIA = Task(id="crit", prompt="Reply to the customer.", criteria=[Criterion(criterion="Polite"),
                                                                     Criterion(criterion="Asks for the order")])


async def test_decision_criteria_a_400_for_one_candidate_fails_it_alone(scripted_server):
    scripted_server.set_handler(refusing(decision_handler(probabilities={"criterion_0": 0.9, "criterion_1": 0.8})))
    cfg = decision_config(scripted_server)
    result = await decide(cfg, CRITERIA, Trajectory(id="a", answer="Sorry! Your order number?"),
                          Trajectory(id="h", answer=HOSTILE), Trajectory(id="b", answer="Order number please."))
    assert result.status is Status.ok
    assert set(result.best) == {"a", "b"} and all(result.candidate(c).passed for c in ("a", "b"))
    h = result.candidate("h")
    assert h.status is Status.failed and h.score is None and h.details["error"]["status"] == 400
    assert "maximum context length" in h.details["error"]["message"]
    assert result.details["failed_candidates"] == ["h"]
    concern = next(c for c in result.concerns if c.kind == "candidate_unjudged")
    assert concern.candidates == ["h"]


async def test_decision_questions_on_a_readout_endpoint_fail_only_the_refused_candidate(scripted_server):
    def readout(req: RecordedRequest) -> Reply:
        return chat_reply("A", logprobs=[("A", -0.05, {"A": -0.05, "B": -3.0})])

    scripted_server.set_handler(refusing(readout))
    cfg = OracleConfig(providers=ProvidersConfig(judge=scripted_server.provider_settings(kind="openai")),
                       decision_judge=DecisionJudgeConfig(backend="logprob_readout"))
    task = Task(id="q", prompt="Reply.", questions=[Question(
        id="tone", type="choice", instructions="Which tone?", options={"warm": "friendly", "cold": "curt"},
        scores={"warm": 5, "cold": 1})])
    result = await decide(cfg, task, Trajectory(id="a", answer="Hi there!"), Trajectory(id="h", answer=HOSTILE))
    assert result.status is Status.ok
    assert result.candidate("a").status is Status.ok and result.candidate("a").score is not None
    assert result.candidate("h").status is Status.failed
    assert result.candidate("h").details["error"]["type"] == "ProviderHTTPError"


async def test_decision_every_candidate_refused_is_a_failed_evaluation(scripted_server):
    scripted_server.set_handler(lambda req: status_reply(400, message=TOO_LONG))
    result = await decide(decision_config(scripted_server), CRITERIA, Trajectory(id="a", answer="x"),
                          Trajectory(id="b", answer="y"))
    assert result.status is Status.failed and result.error.type == "ProviderHTTPError"


async def test_decision_server_error_on_one_candidate_fails_that_candidate_alone(scripted_server):
    scripted_server.set_handler(lambda req: status_reply(500) if hostile_in(req) else
                                decision_handler()(req))
    result = await decide(decision_config(scripted_server), CRITERIA, Trajectory(id="a", answer="x"),
                          Trajectory(id="h", answer=HOSTILE))
    assert result.status is Status.ok, result.error
    assert result.candidate("h").status is Status.failed and result.candidate("a").score is not None


def test_request_bodies_carry_the_hostile_text_only_in_its_own_calls(scripted_server):
    """The fake refuses by content: make sure the marker never leaks into another candidate's call."""
    body = json.dumps({"messages": [{"role": "user", "content": "good"}]}).encode()
    assert not hostile_in(RecordedRequest("POST", "/v1/chat/completions", {}, body))
    assert hostile_in(RecordedRequest("POST", "/", {}, json.dumps({"x": HOSTILE}).encode()))



async def test_cascade_keeps_the_pointwise_place_of_a_close_candidate_whose_pairs_all_failed(scripted_server):
    def handler(req: RecordedRequest) -> Reply:
        pairwise = b'response id=\\"A\\"' in req.body
        if pairwise and hostile_in(req):
            return status_reply(400, message=TOO_LONG)  # two answers together pass the context limit
        return prefer_good(req) if pairwise else pointwise_by_answer(req)

    scripted_server.set_handler(handler)
    cfg = llm_config(scripted_server)
    result = await llm(cfg, TASK, {"a": "a good answer", "h": "a good answer " + HOSTILE, "b": "a good answer 2"})
    assert result.status is Status.ok and set(result.details["close_group"]) == {"a", "h", "b"}
    assert sorted(map(sorted, result.details["failed_pairs"])) == [["a", "h"], ["b", "h"]]
    assert set(result.ranking) == {"a", "h", "b"} and result.ranking[-1] == "h"
    assert result.candidate("h").status is Status.ok and result.candidate("h").score is not None
    assert result.candidate("h").details["pairwise"]["pairs_failed"] == 2
    assert any(c.kind == "candidate_unjudged" for c in result.concerns)


@settings(max_examples=examples(25), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(odd=st.text(min_size=1, max_size=300) | st.sampled_from(["\ud800", "a\udfffb", "\x00" * 50, "}" * 2000]))
async def test_any_candidate_text_leaves_the_honest_score_alone(scripted_server, odd):
    scripted_server.set_handler(pointwise_by_answer)
    cfg = llm_config(scripted_server, mode="pointwise")
    result = await llm(cfg, TASK, {"good": "a good answer", "odd": odd.replace("good answer", "")})
    assert result.status is Status.ok and result.best == ["good"]
    assert result.candidate("good").score == pytest.approx(8 / 9)
    odd_result = result.candidate("odd")
    assert odd_result.status is Status.ok or odd_result.details["error"]["type"] == "UnicodeEncodeError"
