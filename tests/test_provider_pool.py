"""The provider pool: owned by an Oracle, closed with it, never shared, never leaking across loops.

Real HTTP: every test talks to the scripted wire-protocol server over a local socket and counts the
TCP connections the server sees open.
"""

from __future__ import annotations

import asyncio
import json

import pytest

from oracle import Oracle
from oracle.config.model import OracleConfig, ProviderSettings
from oracle.providers import ChatMessage, ChatRequest
from oracle.providers.pool import ProviderPool, ProviderPoolError, endpoint_key
from oracle.results.result import Status
from oracle.tasks.task import Task, Trajectory

TASK = Task(id="t-pool", prompt="Explain why the sky is blue.", criteria=["Correct"], evaluator="llm_judge")
ANSWERS = [Trajectory(id="a", answer="Rayleigh scattering.")]
PING = ChatRequest(messages=[ChatMessage(role="user", content="ping")])


def judge_config(server) -> OracleConfig:
    return OracleConfig(providers={"judge": server.provider_settings()}, llm_judge={"logprobs": False})


def scores(server) -> None:
    """Every chat request gets a valid pointwise verdict."""
    from tests.plugins.scripted_server import chat_reply

    server.set_handler(lambda req: chat_reply(json.dumps(
        {"criteria": {"c1": {"rationale": "fine", "score": 4}}})))


def test_one_client_per_endpoint_and_kind_closed_by_aclose(scripted_server):
    settings = scripted_server.provider_settings()
    other = scripted_server.provider_settings(model="another-model")

    async def run() -> tuple:
        async with ProviderPool() as pool:
            a, b, c = pool.chat(settings), pool.chat(settings), pool.chat(other)
            d = pool.decision(scripted_server.provider_settings(kind="systemone"))
            reply = await a.complete(PING)
            held = scripted_server.settle_connections(1)
            opened = pool.open_clients
        return a, b, c, d, reply, held, opened, pool.open_clients

    a, b, c, d, reply, held, opened, after = asyncio.run(run())
    assert a is b and a is not c and d is not a
    assert reply.text == "ok" and held == 1 and opened == 3
    assert after == 0 and scripted_server.settle_connections(0) == 0


def test_two_oracles_do_not_share_clients(scripted_server):
    scores(scripted_server)
    cfg = judge_config(scripted_server)

    async def run() -> tuple:
        async with Oracle(cfg) as first, Oracle(cfg) as second:
            r1 = await first.aevaluate(TASK, ANSWERS)
            r2 = await second.aevaluate(TASK, ANSWERS)
            c1 = first.providers.chat(cfg.providers.judge, cfg.providers.prices)
            c2 = second.providers.chat(cfg.providers.judge, cfg.providers.prices)
            held = scripted_server.settle_connections(2)
        return r1, r2, c1, c2, held

    r1, r2, c1, c2, held = asyncio.run(run())
    assert r1.status == r2.status == Status.ok, (r1.result, r2.result)
    assert c1 is not c2 and held == 2  # one warm connection per Oracle
    assert scripted_server.settle_connections(0) == 0  # both closed when the `async with` ended


def test_an_open_oracle_reuses_its_connection_across_evaluations(scripted_server):
    scores(scripted_server)
    cfg = judge_config(scripted_server)

    async def run() -> list[int]:
        seen = []
        async with Oracle(cfg) as oracle:
            for _ in range(3):
                assert (await oracle.aevaluate(TASK, ANSWERS)).status == Status.ok
                seen.append(scripted_server.settle_connections(1))
        return seen

    assert asyncio.run(run()) == [1, 1, 1]
    assert len(scripted_server.requests) == 3
    assert scripted_server.settle_connections(0) == 0


def test_no_connection_outlives_its_event_loop(scripted_server):
    """An Oracle used from several loops (asyncio.run per call, the sync runner) leaves nothing open."""
    scores(scripted_server)
    oracle = Oracle(judge_config(scripted_server))
    for _ in range(2):
        assert asyncio.run(oracle.aevaluate(TASK, ANSWERS)).status == Status.ok
        assert scripted_server.settle_connections(0) == 0
    assert oracle.evaluate(TASK, ANSWERS).status == Status.ok
    assert scripted_server.settle_connections(0) == 0
    assert oracle.providers.open_clients == 0 and len(scripted_server.requests) == 3


def test_a_pool_refuses_a_second_loop_while_the_first_holds_clients(scripted_server):
    settings = scripted_server.provider_settings()
    pool = ProviderPool()

    async def open_one() -> None:
        await pool.chat(settings).complete(PING)

    async def close() -> None:
        await pool.aclose()

    loop = asyncio.new_event_loop()
    try:
        loop.run_until_complete(open_one())
        with pytest.raises(ProviderPoolError, match="another event loop"):
            asyncio.run(open_one())
        loop.run_until_complete(close())  # closed on the loop that opened it
    finally:
        loop.close()
    assert scripted_server.settle_connections(0) == 0

    async def open_and_close() -> None:
        await open_one()
        await close()

    asyncio.run(open_and_close())  # after aclose the pool serves any loop again
    assert scripted_server.settle_connections(0) == 0


def test_endpoint_key_tells_keys_and_settings_apart(monkeypatch):
    monkeypatch.setenv("KEY_A", "sk-a")
    monkeypatch.setenv("KEY_B", "sk-b")
    a = ProviderSettings(api_key_env="KEY_A")
    b = ProviderSettings(api_key_env="KEY_B")
    assert endpoint_key(a, None) != endpoint_key(b, None)
    assert endpoint_key(a, None) == endpoint_key(ProviderSettings(api_key_env="KEY_A"), None)
    assert "sk-a" not in endpoint_key(a, None)  # the key itself never appears, only a hash
    assert endpoint_key(a, None) != endpoint_key(a.model_copy(update={"model": "m2"}), None)
