"""Client reuse: one async client per event loop and endpoint, shared by every strategy."""

from __future__ import annotations

import asyncio

from oracle.config import OracleConfig, ProviderSettings
from oracle.providers._loop_clients import close_loop_clients, endpoint_key, loop_client
from oracle.strategy import EvaluationContext
from oracle.task import Task, Trajectory
from oracle.strategies.llm_judge import LLMJudge


class _Client:
    closed = False

    async def aclose(self) -> None:
        self.closed = True


def test_same_loop_and_key_share_a_client_other_loops_do_not():
    async def two():
        a = loop_client(("k",), _Client)
        b = loop_client(("k",), _Client)
        c = loop_client(("other",), _Client)
        await close_loop_clients()
        return a, b, c

    a, b, c = asyncio.run(two())
    assert a is b and a is not c and a.closed and c.closed
    d, _, _ = asyncio.run(two())
    assert d is not a  # a new loop gets its own client (httpx clients are bound to their loop)


def test_endpoint_key_tells_keys_and_settings_apart(monkeypatch):
    monkeypatch.setenv("KEY_A", "sk-a")
    monkeypatch.setenv("KEY_B", "sk-b")
    a = ProviderSettings(api_key_env="KEY_A")
    b = ProviderSettings(api_key_env="KEY_B")
    assert endpoint_key(a, None) != endpoint_key(b, None)
    assert endpoint_key(a, None) == endpoint_key(ProviderSettings(api_key_env="KEY_A"), None)
    assert "sk-a" not in repr(endpoint_key(a, None))  # the key itself never appears, only its hash
    assert endpoint_key(a, None) != endpoint_key(a.model_copy(update={"model": "m2"}), None)


def test_llm_judge_reuses_its_client_across_evaluations_on_one_loop():
    cfg = OracleConfig()
    judge = LLMJudge(cfg.llm_judge)
    ctx = EvaluationContext(task=Task(id="t", prompt="p"), trajectories=(Trajectory(id="a"),), config=cfg)

    async def twice():
        first, second = judge._loop_client(ctx), judge._loop_client(ctx)
        await close_loop_clients()
        return first, second

    first, second = asyncio.run(twice())
    assert first is second
