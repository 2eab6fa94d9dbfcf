"""Model servers that send garbage usage, fail every attempt, or never stop talking.

All over real HTTP to the scripted server: usage is best-effort metadata (a bad block never drops
a verdict), a failed row counts every request it sent, and a reply is capped in size and a call
in total time, each with a clear error.
"""

from __future__ import annotations

import asyncio
import dataclasses
import gzip
import json
import math
import time

import pytest

from oracle.config.model import DecisionJudgeConfig, OracleConfig, ProviderSettings, ProvidersConfig
from oracle.errors import ProviderTimeout, ResponseTooLarge
from oracle.providers import make_async_chat_client, make_chat_client
from oracle.providers.types import ChatMessage, ChatRequest
from oracle.results.result import Status
from oracle._evaluators import evaluator_factory
from oracle.strategies.protocol import EvaluationContext
from oracle.tasks.task import Task, Trajectory
from tests.plugins.scripted_server import Reply, chat_reply, decision_handler, status_reply

CAND = Trajectory(id="c1", answer="Could you send me your order number?")
CRITERIA = Task(id="t", prompt="Customer: charged twice.", criteria=["asks for the order number"])
QUESTION = Task(id="q", prompt="Customer: charged twice.", questions=[
    {"id": "team", "type": "choice", "instructions": "Which team?",
     "options": {"billing": "money", "technical": "bugs"}, "scores": {"billing": 5, "technical": 1}}])
REQ = ChatRequest(messages=[ChatMessage(role="user", content="hi")])


def _config(server, *, native: bool = False, **provider) -> OracleConfig:
    judge = server.provider_settings(kind="openai", **provider)
    decision = server.provider_settings(kind="decisions", **provider) if native else None
    return OracleConfig(providers=ProvidersConfig(judge=judge, decision=decision),
                        decision_judge=DecisionJudgeConfig())


async def _evaluate(config: OracleConfig, task: Task):
    judge = evaluator_factory("decision_judge")()
    return await judge.evaluate(EvaluationContext(task=task, trajectories=(CAND,), config=config))


def _readout_with_usage(usage) -> Reply:
    top = {"Yes": math.log(0.8), "No": math.log(0.2)}
    reply = chat_reply("Yes", logprobs=[("Yes", top["Yes"], top)], completion_tokens=1)
    return dataclasses.replace(reply, json={**reply.json, "usage": usage})


GARBAGE_USAGE = ["lots", 17, [1, 2], None, {"prompt_tokens": "many", "completion_tokens": [1]},
                 {"prompt_tokens": -5, "completion_tokens": 1.5}, {"prompt_tokens": True},
                 {"prompt_tokens": "12", "completion_tokens": "3"}]


@pytest.mark.parametrize("usage", GARBAGE_USAGE, ids=[str(i) for i in range(len(GARBAGE_USAGE))])
async def test_garbage_usage_never_drops_a_readout_verdict(scripted_server, usage):
    scripted_server.push(_readout_with_usage(usage))
    result = await _evaluate(_config(scripted_server), CRITERIA)
    assert result.status == Status.ok, result.error
    assert result.candidates[0].passed is True and result.candidates[0].score == pytest.approx(0.8)
    tokens = result.provenance.tokens.model_dump()
    if usage == {"prompt_tokens": "12", "completion_tokens": "3"}:
        assert tokens == {"input": 12, "output": 3}          # digit strings are read
    else:
        assert tokens["input"] is None or tokens["output"] is None   # unknown, never invented


@pytest.mark.parametrize("usage", ["garbage", {"input_tokens": {"a": 1}, "output_tokens": "x"}])
async def test_garbage_usage_never_drops_a_native_verdict(scripted_server, usage):
    handler = decision_handler(probabilities={"team": {"billing": 0.9, "technical": 0.1}})

    def with_bad_usage(request):
        reply = handler(request)
        return dataclasses.replace(reply, json={**reply.json, "usage": usage})

    scripted_server.set_handler(with_bad_usage)
    result = await _evaluate(_config(scripted_server, native=True), QUESTION)
    assert result.status == Status.ok, result.error
    assert result.candidates[0].score == 1.0 and result.cost_usd is None


@pytest.mark.parametrize("native", [False, True])
async def test_a_failed_row_counts_every_request(scripted_server, native):
    scripted_server.set_handler(lambda request: status_reply(500))
    result = await _evaluate(_config(scripted_server, native=native, max_retries=3),
                             QUESTION if native else CRITERIA)
    assert result.status == Status.failed and result.error.type == "ProviderHTTPError"
    assert len(scripted_server.requests) == 4
    assert result.calls == 4                                      # not 0
    assert [f.model_dump() for f in result.provenance.failed_calls] == [
        {"error": "ProviderHTTPError", "attempts": 4, "member": None}]
    assert result.provenance.requests == 4 and result.provenance.retries == 3


async def test_retried_successes_count_their_attempts_too(scripted_server):
    top = {"Yes": math.log(0.8), "No": math.log(0.2)}
    scripted_server.push(status_reply(503), chat_reply("Yes", logprobs=[("Yes", top["Yes"], top)]))
    result = await _evaluate(_config(scripted_server), CRITERIA)
    assert result.status == Status.ok and result.calls == 2 == len(scripted_server.requests)
    assert result.provenance.retries == 1


# --- servers that never stop talking -----------------------------------------------------------

def test_an_endless_reply_is_cut_at_the_size_cap_sync(scripted_server):
    scripted_server.push(Reply(fault="endless"))
    settings = scripted_server.provider_settings(max_reply_bytes=1 << 20, timeout_s=30)
    start = time.perf_counter()
    with pytest.raises(ResponseTooLarge, match="max_reply_bytes=1048576"):
        with make_chat_client(settings) as client:
            client.complete(REQ)
    assert time.perf_counter() - start < 10
    assert len(scripted_server.requests) == 1                       # not retried


async def test_an_endless_reply_is_cut_at_the_size_cap_async(scripted_server):
    scripted_server.push(Reply(fault="endless"))
    settings = scripted_server.provider_settings(max_reply_bytes=1 << 20, timeout_s=30)
    async with make_async_chat_client(settings) as client:
        with pytest.raises(ResponseTooLarge):
            await client.complete(REQ)
    assert len(scripted_server.requests) == 1


@pytest.mark.parametrize("sync", [True, False])
async def test_a_gzip_bomb_counts_at_its_decompressed_size(scripted_server, sync):
    body = b'{"x": "' + b"a" * (9 << 20) + b'"}'
    packed = gzip.compress(body)
    assert len(packed) < 100_000
    scripted_server.push(Reply(body=packed, headers={"content-encoding": "gzip"}))
    settings = scripted_server.provider_settings()                  # default cap: 8 MiB
    assert settings.max_reply_bytes == 8 * 1024 * 1024
    with pytest.raises(ResponseTooLarge):
        if sync:
            with make_chat_client(settings) as client:
                client.complete(REQ)
        else:
            async with make_async_chat_client(settings) as client:
                await client.complete(REQ)


def test_a_declared_oversize_body_is_refused_before_reading(scripted_server):
    scripted_server.push(Reply(body=b" " * (2 << 20) + json.dumps(chat_reply("hi").json).encode()))
    settings = scripted_server.provider_settings(max_reply_bytes=1 << 20)
    with pytest.raises(ResponseTooLarge, match="declared"):
        with make_chat_client(settings) as client:
            client.complete(REQ)


def test_a_big_but_allowed_reply_still_parses(scripted_server):
    scripted_server.push(Reply(body=b" " * (3 << 20) + json.dumps(chat_reply("fine").json).encode()))
    with make_chat_client(scripted_server.provider_settings()) as client:
        assert client.complete(REQ).text == "fine"


async def test_total_call_time_is_capped_across_retries(scripted_server):
    scripted_server.set_handler(lambda request: Reply(status=503, json={}, delay_s=0.3))
    settings = scripted_server.provider_settings(max_retries=50, deadline_s=1.0, timeout_s=5,
                                                 backoff_base_s=0.05, backoff_max_s=0.1)
    start = time.perf_counter()
    async with make_async_chat_client(settings) as client:
        with pytest.raises(Exception) as info:
            await client.complete(REQ)
    took = time.perf_counter() - start
    assert took < 2.5, took
    assert "deadline" in str(info.value)
    assert ProviderSettings().deadline_s == 600.0                    # on by default


async def test_a_trickling_server_is_cut_at_the_attempt_timeout(scripted_server):
    slow = Reply(fault="endless", body=b" ", endless_limit_bytes=10 ** 9)  # one byte per chunk
    scripted_server.push(slow, slow, slow)
    settings = scripted_server.provider_settings(max_retries=0, timeout_s=0.5)
    start = time.perf_counter()
    with pytest.raises(ProviderTimeout):
        with make_chat_client(settings) as client:
            await asyncio.to_thread(client.complete, REQ)
    assert time.perf_counter() - start < 5
