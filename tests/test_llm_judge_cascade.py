"""LLM judge auto mode with several candidates: pointwise for all, then both-order pairwise only
among the candidates within ``pairwise_margin`` of the top (the scripted server over real HTTP)."""

from __future__ import annotations

import json
import re

from oracle.config.model import OracleConfig
from oracle.results.result import Status
from tests.plugins.scripted_server import chat_reply
from tests.test_llm_judge import TASK, block, config, ctx, evaluate, pointwise_json, prefer, seats, user_text


def cascade_judge(points: dict[str, int], rank_of: dict[str, int]):
    """Pointwise requests (one response block) get ``points`` on every criterion; pairwise requests
    (seats A and B) go to the lower rank number."""

    def handler(req):
        text = user_text(req)
        if 'id="A"' in text:
            return prefer(rank_of)(req)
        answer = block(text, "response")
        return chat_reply(pointwise_json({"c1": points[answer], "c2": points[answer], "c3": points[answer]}))

    return handler


async def test_auto_with_a_clear_pointwise_winner_spends_no_pairwise_call(scripted_server):
    scripted_server.set_handler(cascade_judge({"best": 9, "mid": 4, "worst": 1}, {"best": 0, "mid": 1, "worst": 2}))
    cfg = config(scripted_server)
    result = await evaluate(cfg, ctx(cfg, TASK, "mid", "worst", "best", ids=["m", "w", "b"]))
    assert result.status == Status.ok and result.details["mode"] == "cascade"
    assert result.ranking == ["b", "m", "w"] and result.best == ["b"]
    assert result.calls == 3 and result.details["pairwise_calls"] == 0 and result.details["close_group"] == ["b"]
    assert not any('id="A"' in user_text(r) for r in scripted_server.requests)


async def test_auto_judges_only_the_close_group_pairwise_and_reorders_only_inside_it(scripted_server):
    # Pointwise: a and b tie at the top, c is far behind; pairwise prefers b, and would put c first.
    scripted_server.set_handler(cascade_judge({"alpha": 8, "beta": 8, "gamma": 2},
                                              {"gamma": 0, "beta": 1, "alpha": 2}))
    cfg = config(scripted_server)
    result = await evaluate(cfg, ctx(cfg, TASK, "alpha", "beta", "gamma", ids=["a", "b", "c"]))
    assert result.status == Status.ok
    assert result.details["close_group"] == ["a", "b"]
    assert result.ranking == ["b", "a", "c"] and result.best == ["b"]  # c stays last: outside the group
    pairs = {seats(r) for r in scripted_server.requests if 'id="A"' in user_text(r)}
    assert pairs == {("alpha", "beta"), ("beta", "alpha")}  # both orders, only inside the group
    assert result.calls == 5 and result.details["pointwise_calls"] == 3 and result.details["pairwise_calls"] == 2
    assert result.candidate("a").score == result.candidate("b").score  # pointwise scores are kept
    assert result.candidate("b").details["pairwise"]["wins"] == 1


async def test_the_margin_is_configurable(scripted_server):
    scripted_server.set_handler(cascade_judge({"alpha": 9, "beta": 7, "gamma": 6}, {"gamma": 0, "beta": 1, "alpha": 2}))
    narrow = config(scripted_server, pairwise_margin=0.0)
    assert (await evaluate(narrow, ctx(narrow, TASK, "alpha", "beta", "gamma"))).details["pairwise_calls"] == 0
    wide = config(scripted_server, pairwise_margin=1.0)
    result = await evaluate(wide, ctx(wide, TASK, "alpha", "beta", "gamma", ids=["a", "b", "c"]))
    assert result.details["close_group"] == ["a", "b", "c"] and result.details["pairwise_calls"] == 6
    assert result.ranking == ["c", "b", "a"]


async def test_a_hard_route_spends_repeats_and_both_orders(scripted_server):
    """difficulty: hard routes with route.hard; the judge then samples hard_repeats times at
    hard_temperature (one candidate) and runs the full pairwise tournament (several)."""
    from oracle import Oracle

    cfg = OracleConfig(providers={"judge": scripted_server.provider_settings()}, llm_judge={"logprobs": False})
    def answer(req):
        text = user_text(req)
        if 'boundary="' in text and 'id="B"' in text:  # a pairwise prompt: two seats
            return chat_reply(json.dumps({"rationale": "A reads better", "winner": "A"}))
        ids = re.findall(r'"(\w+)": \{"rationale"', text)
        return chat_reply(pointwise_json({i: 7 for i in ids}))

    scripted_server.set_handler(answer)
    one = {"task": {"id": "h1", "prompt": "Write a short poem about the sea.", "difficulty": "hard"},
           "trajectories": [{"id": "a", "answer": "Waves fold the light."}]}
    res = await Oracle(cfg).aevaluate(one)
    assert res.route.hard and res.route.evaluator == "llm_judge"
    assert len(scripted_server.requests) == 3
    assert {r.json["temperature"] for r in scripted_server.requests} == {0.7}
    assert res.result.provenance.config_hash != cfg.hash()  # the settings that ran are the ones hashed
    scripted_server.requests.clear()
    two = {"task": {"id": "h2", "prompt": "Write a short poem about the sea.", "difficulty": "hard"},
           "trajectories": [{"id": "a", "answer": "Waves fold the light."}, {"id": "b", "answer": "Salt."}]}
    res = await Oracle(cfg).aevaluate(two)
    assert res.result.details["mode"] == "pairwise"
    easy = {"task": {"id": "h3", "prompt": "Write a short poem about the sea."},
            "trajectories": [{"id": "a", "answer": "Waves fold the light."}]}
    scripted_server.requests.clear()
    res = await Oracle(cfg).aevaluate(easy)
    assert not res.route.hard and len(scripted_server.requests) == 1
