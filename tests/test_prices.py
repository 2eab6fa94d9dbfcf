"""One price source (oracle/providers/prices.py): genai-prices' bundled table, config overrides, None when unknown.

The expected figures are the library's own (``genai_prices.calc_price``), so the tests check that
our costs are that figure, not a number copied from a price page.
"""

from __future__ import annotations

import json

import pytest
from genai_prices import Usage, calc_price

from oracle.config.model import OracleConfig, Price
from oracle.providers.prices import cost_usd, endpoint_cost_usd
from oracle.providers import ChatMessage, ChatRequest, make_chat_client
from oracle.results.result import Status
from oracle.strategies.llm_judge.strategy import LLMJudge
from oracle.strategies.protocol import EvaluationContext
from oracle.tasks.task import Task, Trajectory
from tests.plugins.scripted_server import chat_reply

HOSTED = [("openai", "gpt-4o-mini"), ("anthropic", "claude-3-5-sonnet-20241022")]


def library(model: str, provider: str, tokens_in: int, tokens_out: int) -> float:
    return float(calc_price(Usage(input_tokens=tokens_in, output_tokens=tokens_out), model,
                            provider_id=provider).total_price)


@pytest.mark.parametrize(("provider", "model"), HOSTED)
def test_a_hosted_model_costs_the_librarys_own_figure(provider, model):
    cost = cost_usd(provider, model, 12_000, 3_000)
    assert cost is not None and cost > 0
    assert cost == pytest.approx(library(model, provider, 12_000, 3_000), rel=1e-12)
    assert cost_usd(None, model, 12_000, 3_000) == pytest.approx(cost)            # found by the name
    assert cost_usd(None, model, 12_000, 3_000, api_url=f"https://api.{provider}.com/v1") == pytest.approx(cost)


def test_unknown_stays_none_never_zero():
    assert cost_usd(None, "no-such-model-7b-oracle-test", 1000, 1000) is None
    assert cost_usd("openai", "no-such-model-7b-oracle-test", 1000, 1000) is None
    assert cost_usd("no-such-provider", "gpt-4o-mini", 1000, 1000) is None
    assert cost_usd("openai", "gpt-4o-mini", None, 1000) is None                  # tokens unknown
    assert cost_usd("openai", None, 1000, 1000) is None


def test_a_config_override_wins():
    mine = {"gpt-4o-mini": Price(input_per_mtok=1.0, output_per_mtok=2.0)}
    assert cost_usd("openai", "gpt-4o-mini", 1000, 500, overrides=mine) == pytest.approx((1000 + 1000) / 1e6)
    assert cost_usd(None, "house-model", 2_000_000, 0, overrides={"house-model": Price(input_per_mtok=0.25,
                                                                                         output_per_mtok=1)}) == 0.5


def test_a_server_on_this_machine_is_unpriced_unless_told(scripted_server):
    local = scripted_server.provider_settings(model="gpt-4o-mini")               # 127.0.0.1
    assert endpoint_cost_usd(local, "gpt-4o-mini", 1000, 100, None) is None
    told = local.model_copy(update={"price_provider": "openai"})
    assert endpoint_cost_usd(told, "gpt-4o-mini", 1000, 100, None) == pytest.approx(
        library("gpt-4o-mini", "openai", 1000, 100))
    assert endpoint_cost_usd(local, "gpt-4o-mini", 1000, 100,
                             {"gpt-4o-mini": Price(input_per_mtok=3, output_per_mtok=0)}) == pytest.approx(0.003)


def test_replies_on_the_wire_carry_the_price_source(scripted_server):
    scripted_server.push(chat_reply("hi", model="gpt-4o-mini-2024-07-18", prompt_tokens=1500, completion_tokens=40))
    settings = scripted_server.provider_settings(model="gpt-4o-mini", price_provider="openai")
    with make_chat_client(settings) as client:
        reply = client.complete(ChatRequest(messages=[ChatMessage(role="user", content="x")]))
    assert reply.cost_usd == pytest.approx(library("gpt-4o-mini", "openai", 1500, 40))


async def test_an_evaluator_reports_a_cost_for_a_hosted_model(scripted_server):
    scripted_server.set_handler(lambda r: chat_reply(
        json.dumps({"criteria": {"overall": {"rationale": "ok", "score": 8}}}), model="gpt-4o-mini",
        prompt_tokens=800, completion_tokens=25))
    judge = scripted_server.provider_settings(model="gpt-4o-mini", price_provider="openai")
    config = OracleConfig(providers={"judge": judge}, llm_judge={"logprobs": False})
    result = await LLMJudge().evaluate(EvaluationContext(
        task=Task(id="t", prompt="p"), trajectories=(Trajectory(id="c", answer="a"),), config=config))
    assert result.status == Status.ok and result.calls == 1
    assert result.cost_usd == pytest.approx(library("gpt-4o-mini", "openai", 800, 25))
    assert result.provenance.calls[0].cost_usd == pytest.approx(result.cost_usd)
    # the same server without a price provider: unknown (null), not 0
    unpriced = OracleConfig(providers={"judge": scripted_server.provider_settings(model="gpt-4o-mini")},
                            llm_judge={"logprobs": False})
    result = await LLMJudge().evaluate(EvaluationContext(
        task=Task(id="t", prompt="p"), trajectories=(Trajectory(id="c", answer="a"),), config=unpriced))
    assert result.status == Status.ok and result.cost_usd is None
