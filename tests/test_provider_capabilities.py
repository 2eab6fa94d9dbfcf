"""A server that ignores ``logprobs``, over real HTTP to the scripted OpenAI-compatible server.

Missing logprobs is the server's answer about a capability: learned once per client (a provider
pool shares one client per endpoint among its evaluations), never retried; the decision judge's
readout falls back to sampling, recorded as the probability source with the number of samples;
``calls`` counts every HTTP request and ``provenance.retries`` the repeats among them.
"""

from __future__ import annotations

import json

from oracle.config.model import OracleConfig
from oracle.providers.pool import ProviderPool
from oracle.results.result import Status
from oracle.strategies.decision_judge.strategy import DecisionJudge
from oracle.strategies.llm_judge.strategy import LLMJudge
from oracle.strategies.protocol import EvaluationContext
from oracle.tasks.task import Task, Trajectory
from tests.plugins.scripted_server import RecordedRequest, Reply, chat_reply, status_reply

CAND = Trajectory(id="c1", answer="Could you send me your order number?")
CRITERIA = Task(id="t", prompt="Customer: I was charged twice.",
                criteria=["asks for the order number", "is rude to the customer"])


def _user(request: RecordedRequest) -> str:
    return next(m["content"] for m in request.json["messages"] if m["role"] == "user")


def _ignores_logprobs(request: RecordedRequest) -> Reply:
    """Answers every chat request without logprobs, whatever was asked; Yes only to the first criterion."""
    text = _user(request)
    if "Answer with" in text:
        return chat_reply("No" if "is rude" in text else "Yes", completion_tokens=1)
    return chat_reply(json.dumps({"criteria": {"overall": {"rationale": "fine", "score": 7}}}))


def _config(server, **sections) -> OracleConfig:
    # default retry budget (4 retries), fast backoff: a retry would show up as extra requests
    judge = server.provider_settings(max_retries=4)
    return OracleConfig(providers={"judge": judge}, **sections)


async def test_decision_judge_samples_where_logprobs_are_ignored_and_learns_it_once(scripted_server):
    scripted_server.set_handler(_ignores_logprobs)
    config = _config(scripted_server, decision_judge={"samples": 5, "sample_temperature": 0.8})
    judge = DecisionJudge()
    seen = []
    async with ProviderPool() as pool:
        results = []
        for _ in range(3):
            before = len(scripted_server.requests)
            results.append(await judge.evaluate(EvaluationContext(
                task=CRITERIA, trajectories=(CAND,), config=config, providers=pool)))
            seen.append(scripted_server.requests[before:])

    # first evaluation: one readout per criterion (answered without logprobs), then 5 samples each
    first = seen[0]
    readouts = [r for r in first if r.json.get("logprobs")]
    assert len(readouts) == 2 and all(r.json["max_tokens"] == 1 for r in readouts)
    assert len(first) == 2 + 2 * 5
    # learned: later evaluations sample straight away, never asking for logprobs again
    assert [len(s) for s in seen[1:]] == [10, 10]
    assert not any(r.json.get("logprobs") for s in seen[1:] for r in s)
    samples = [r for s in seen for r in s if not r.json.get("logprobs")]
    assert all(r.json["temperature"] == 0.8 for r in samples)

    for result, sent in zip(results, seen):
        assert result.status == Status.ok, result.error
        assert result.calls == len(sent) == result.provenance.requests      # every HTTP request
        assert result.provenance.retries == 0 and result.provenance.failed_calls == []
        assert result.provenance.samples == 5
        rows = result.candidates[0].details["criteria"]
        assert [row["probability_source"] for row in rows] == ["sampled", "sampled"]
        assert [row["probability"] for row in rows] == [1.0, 0.0]           # counted labels
        assert result.candidates[0].passed is False
    assert results[0].provenance.probability_sources == ["logprob_readout", "sampled"]
    assert results[1].provenance.probability_sources == ["sampled"]
    # the backend a later evaluation picks says what it did: sampling, learned from the first
    assert [r.provenance.decision_backend for r in results] == ["logprob_readout", "sampled", "sampled"]


async def test_llm_judge_keeps_the_reply_without_logprobs_and_stops_asking(scripted_server):
    scripted_server.set_handler(_ignores_logprobs)
    config = _config(scripted_server, llm_judge={"logprobs": True})
    task = Task(id="lp", prompt="Explain why the sky is blue.")
    async with ProviderPool() as pool:
        results = [await LLMJudge().evaluate(EvaluationContext(
            task=task, trajectories=(CAND,), config=config, providers=pool)) for _ in range(3)]
    assert [bool(r.json.get("logprobs")) for r in scripted_server.requests] == [True, False, False]
    for result in results:
        assert result.status == Status.ok and result.calls == 1 and result.provenance.retries == 0
        assert result.candidates[0].score is not None
    assert results[0].provenance.logprobs_dropped is True
    assert results[0].candidates[0].details["logprob_weighted_unavailable"] == ["no_logprobs"]


async def test_retries_are_reported_beside_the_requests(scripted_server):
    scripted_server.push(status_reply(503), status_reply(429, retry_after=0.01),
                         chat_reply("Yes", completion_tokens=1))
    scripted_server.set_handler(_ignores_logprobs)
    config = _config(scripted_server, decision_judge={"samples": 3})
    task = Task(id="t", prompt="p", criteria=["asks for the order number"])
    result = await DecisionJudge().evaluate(EvaluationContext(task=task, trajectories=(CAND,), config=config))
    assert result.status == Status.ok, result.error
    # readout: 3 attempts (2 retried), answered without logprobs; then 3 samples
    assert len(scripted_server.requests) == 6 == result.calls
    assert result.provenance.retries == 2
    assert result.provenance.model_dump(mode="json")["retries"] == 2
