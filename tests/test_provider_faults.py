"""Fault injection over real sockets: every fault gives retries and then a clear ProviderError."""

from __future__ import annotations

import asyncio
import time

import pytest

from oracle.errors import (ProviderError, ProviderHTTPError, ProviderTimeout, RateLimited,
                           ResponseParseError)
from oracle.providers import (ChatMessage, ChatRequest, DecisionQuestion, DecisionRequest,
                              make_async_chat_client, make_async_decision_client, make_chat_client)
from tests.plugins.scripted_server import (Reply, chat_reply, decision_handler, garbage_reply,
                                           status_reply, truncated_reply)

REQ = ChatRequest(messages=[ChatMessage(role="user", content="Say ok.")], max_tokens=4)

FAULTS = {
    "429": (lambda: status_reply(429, retry_after=0.01), RateLimited, 429),
    "500": (lambda: status_reply(500), ProviderHTTPError, 500),
    "503": (lambda: status_reply(503), ProviderHTTPError, 503),
    "reset": (lambda: Reply(fault="reset"), ProviderError, None),
    "slow": (lambda: Reply(delay_s=3.0, json=chat_reply("late").json), ProviderTimeout, None),
    "truncated": (truncated_reply, ResponseParseError, 200),
    "garbage": (garbage_reply, ResponseParseError, 200),
}


async def _complete(settings, **kw):
    client = make_async_chat_client(settings, **kw)
    try:
        # The hang guard: a fault must end in an error well before this.
        return await asyncio.wait_for(client.complete(REQ), timeout=10)
    finally:
        await client.aclose()


@pytest.mark.parametrize("fault", sorted(FAULTS))
async def test_fault_retried_then_clear_error(scripted_server, fault):
    make_reply, error_type, status = FAULTS[fault]
    scripted_server.push(*(make_reply() for _ in range(3)))
    # 1 s: far below the slow fault's 3 s, far above a healthy reply on a loaded machine (0.3 s
    # turned a prompt reply into a timeout there).
    settings = scripted_server.provider_settings(max_retries=2, timeout_s=1.0)
    started = time.monotonic()
    with pytest.raises(error_type) as info:
        await _complete(settings)
    err = info.value
    assert type(err) is error_type  # the most specific class, not just "some ProviderError"
    assert err.attempts == 3
    assert err.status == status
    assert "after 3 attempts" in str(err)
    assert len(scripted_server.requests) == 3
    assert time.monotonic() - started < 8


@pytest.mark.parametrize("fault", sorted(FAULTS))
async def test_fault_then_success_recovers(scripted_server, fault):
    make_reply, _, _ = FAULTS[fault]
    scripted_server.push(make_reply(), chat_reply("recovered", model="answering-model"))
    reply = await _complete(scripted_server.provider_settings(timeout_s=1.0))
    assert reply.text == "recovered"
    assert reply.provenance.attempts == 2
    assert reply.provenance.model_answered == "answering-model"


@pytest.mark.parametrize("fault", ["500", "reset", "garbage", "slow"])
def test_sync_client_same_rules(scripted_server, fault):
    make_reply, error_type, _ = FAULTS[fault]
    scripted_server.push(*(make_reply() for _ in range(2)))
    with make_chat_client(scripted_server.provider_settings(max_retries=1, timeout_s=1.0)) as client:
        with pytest.raises(error_type) as info:
            client.complete(REQ)
    assert info.value.attempts == 2
    assert len(scripted_server.requests) == 2


async def test_missing_decision_answer_is_parse_error_after_retries(scripted_server):
    scripted_server.set_handler(decision_handler(omit={"q2"}))
    settings = scripted_server.provider_settings(kind="systemone", max_retries=1)
    req = DecisionRequest(state="x", questions=[
        DecisionQuestion(id="q1", type="likelihood", instructions="a?"),
        DecisionQuestion(id="q2", type="likelihood", instructions="b?")])
    client = make_async_decision_client(settings)
    with pytest.raises(ResponseParseError, match="no answer for question 'q2'") as info:
        await asyncio.wait_for(client.decide(req), 10)
    await client.aclose()
    assert info.value.attempts == 2
    assert len(scripted_server.requests) == 2


async def test_retry_after_is_honoured(scripted_server):
    scripted_server.push(status_reply(429, retry_after=0.15), chat_reply("ok"))
    slept: list[float] = []

    async def record_sleep(seconds: float) -> None:
        slept.append(seconds)

    reply = await _complete(scripted_server.provider_settings(backoff_base_s=0.001), sleep=record_sleep)
    assert reply.provenance.attempts == 2
    assert slept and slept[0] >= 0.15  # backoff alone would have been ~1 ms


async def test_retry_after_beyond_backoff_max_gives_up_at_once(scripted_server):
    scripted_server.push(status_reply(429, retry_after=3600))
    with pytest.raises(RateLimited, match="asked to wait 3600s") as info:
        await _complete(scripted_server.provider_settings(backoff_max_s=1.0))
    assert info.value.attempts == 1
    assert len(scripted_server.requests) == 1


async def test_client_error_is_not_retried(scripted_server):
    scripted_server.push(status_reply(400, message="bad field temperature"))
    with pytest.raises(ProviderHTTPError) as info:
        await _complete(scripted_server.provider_settings(max_retries=4))
    assert info.value.status == 400
    assert "bad field temperature" in info.value.body
    assert len(scripted_server.requests) == 1


async def test_overall_deadline_bounds_retries(scripted_server):
    scripted_server.set_handler(lambda req: Reply(delay_s=2.0, json=chat_reply("late").json))
    settings = scripted_server.provider_settings(max_retries=10, timeout_s=0.25, deadline_s=0.6)
    started = time.monotonic()
    with pytest.raises(ProviderTimeout):
        await _complete(settings)
    assert time.monotonic() - started < 1.5
    assert 2 <= len(scripted_server.requests) <= 4


async def test_backoff_grows_exponentially(scripted_server):
    scripted_server.push(*(status_reply(503) for _ in range(4)))
    slept: list[float] = []

    async def record_sleep(seconds: float) -> None:
        slept.append(seconds)

    settings = scripted_server.provider_settings(max_retries=3, backoff_base_s=0.1, backoff_max_s=10)
    with pytest.raises(ProviderHTTPError):
        await _complete(settings, sleep=record_sleep)
    # equal jitter: retry i waits between half and all of base * 2**i
    assert len(slept) == 3
    for i, s in enumerate(slept):
        assert 0.05 * 2 ** i <= s <= 0.1 * 2 ** i


async def test_concurrency_limit_is_enforced(scripted_server):
    scripted_server.latency_s = 0.1
    client = make_async_chat_client(scripted_server.provider_settings(concurrency=3))
    started = time.monotonic()
    await asyncio.gather(*(client.complete(REQ) for _ in range(9)))
    elapsed = time.monotonic() - started
    await client.aclose()
    # 9 requests, 3 at a time, 100 ms each: at least 3 rounds (>= ~0.3 s); unbounded would be ~0.1 s
    assert elapsed >= 0.28
    assert len(scripted_server.requests) == 9


async def test_concurrency_limit_holds_across_connection_shards(scripted_server):
    scripted_server.latency_s = 0.1
    client = make_async_chat_client(scripted_server.provider_settings(concurrency=20))  # 3 pools
    started = time.monotonic()
    replies = await asyncio.gather(*(client.complete(REQ) for _ in range(40)))
    elapsed = time.monotonic() - started
    await client.aclose()
    assert len(replies) == 40 and all(r.text == "ok" for r in replies)
    assert elapsed >= 0.19  # 40 requests, 20 at a time, 100 ms each: two rounds at least
    # latency counts from the send, not from the wait for a slot
    assert all(90 <= r.provenance.latency_ms < 1000 for r in replies)


async def test_a_4xx_error_carries_the_servers_own_words(scripted_server):
    scripted_server.push(status_reply(404, message="The model `gpt-9` does not exist"))
    with pytest.raises(ProviderHTTPError) as info:
        await _complete(scripted_server.provider_settings(max_retries=2))
    assert "HTTP 404" in str(info.value) and "The model `gpt-9` does not exist" in str(info.value)
    assert info.value.attempts == 1 and len(scripted_server.requests) == 1  # a 4xx is not retried


async def test_nothing_listening_at_the_local_endpoint_says_how_to_start_it():
    import socket

    with socket.socket() as probe:  # a loopback port nobody listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    from oracle.config.model import ProviderSettings

    settings = ProviderSettings(base_url=f"http://127.0.0.1:{port}/v1", max_retries=0)
    with pytest.raises(ProviderError) as info:
        await _complete(settings)
    assert "oracle model serve" in str(info.value) and "ORACLE_BASE_URL" in str(info.value)


@pytest.mark.slow
def test_the_cli_shows_the_hint_when_the_local_model_is_not_running(tmp_path):
    import json
    import socket
    import subprocess
    import sys
    from pathlib import Path

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    task = tmp_path / "t.json"
    task.write_text(json.dumps({"task": {"id": "t", "prompt": "Explain why the sky is blue.",
                                         "evaluator": "llm_judge"},
                                "trajectories": [{"id": "a", "answer": "Rayleigh scattering."}]}))
    env = {**__import__("os").environ, "ORACLE_BASE_URL": f"http://127.0.0.1:{port}/v1"}
    res = subprocess.run([sys.executable, "-m", "oracle", "evaluate", str(task)], capture_output=True, text=True,
                         env=env, cwd=Path(__file__).resolve().parents[1], timeout=120)
    assert "oracle model serve" in res.stdout + res.stderr, res.stdout + res.stderr
