"""LLM judge panels against the scripted OpenAI-compatible server (real HTTP): the members are told
apart by the ``model`` each request names, so one server plays every member."""

from __future__ import annotations

import pytest

from oracle import Oracle
from oracle.config.model import OracleConfig
from oracle.results.result import Status
from oracle.tasks.task import Task
from tests.plugins.scripted_server import chat_reply
from tests.test_llm_judge import block, ctx, evaluate, pairwise_reply, pointwise_json, seats, user_text

RANK = {"best answer": 0, "middle answer": 1, "worst answer": 2}
PRICES = {m: {"input_per_mtok": 1.0, "output_per_mtok": 2.0} for m in ("honest-1", "honest-2", "seat-a")}


def panel_server(server, points: dict[str, dict[str, int]] | None = None):
    """honest-*: prefer the better answer in either seat; seat-a: always seat A. Pointwise: the
    member's own points per answer (``points[model][answer]``)."""

    def handler(req):
        model = req.json["model"]
        text = user_text(req)
        if 'id="B"' in text:
            a, b = seats(req)
            if model == "seat-a":
                return chat_reply(pairwise_reply("A"), model=model)
            return chat_reply(pairwise_reply("A" if RANK[a] < RANK[b] else "B"), model=model)
        score = (points or {}).get(model, {}).get(block(text, "response"), 5)
        return chat_reply(pointwise_json({"overall": score}), model=model)

    server.set_handler(handler)


def panel_config(server, models: list[str], **judge) -> OracleConfig:
    judge.setdefault("logprobs", False)
    members = [{"base_url": server.base_url, "model": m} for m in models]
    return OracleConfig(providers={"judge": server.provider_settings(), "prices": PRICES},
                        llm_judge={"panel": members, **judge})


ANSWERS = ("middle answer", "worst answer", "best answer")


async def test_a_seat_a_member_changes_no_verdict_and_is_flagged(scripted_server):
    panel_server(scripted_server)
    honest = panel_config(scripted_server, ["honest-1", "honest-2"], mode="pairwise")
    three = panel_config(scripted_server, ["honest-1", "honest-2", "seat-a"], mode="pairwise")
    two = await evaluate(honest, ctx(honest, Task(id="p", prompt="p"), *ANSWERS, ids=["m", "w", "b"]))
    res = await evaluate(three, ctx(three, Task(id="p", prompt="p"), *ANSWERS, ids=["m", "w", "b"]))
    assert two.status == res.status == Status.ok
    assert res.best == two.best == ["b"] and res.ranking == two.ranking == ["b", "m", "w"]
    assert ([(p["a"], p["b"], p["winner"]) for p in res.details["pairs"]]
            == [(p["a"], p["b"], p["winner"]) for p in two.details["pairs"]])
    assert two.details["panel"]["split_pairs"] == [] and not any(c.kind == "panel_disagreement" for c in two.concerns)
    panel = res.details["panel"]
    assert panel["members"] == ["honest-1", "honest-2", "seat-a"]
    assert sorted(map(sorted, panel["split_pairs"])) == [["b", "m"], ["b", "w"], ["m", "w"]]
    for p in panel["pairs"]:
        assert p["members"]["seat-a"] == {"winner": None, "order_consistent": False}
        assert p["members"]["honest-1"]["order_consistent"] is True
    concern = next(c for c in res.concerns if c.kind == "panel_disagreement")
    assert set(concern.candidates) == {"m", "w", "b"} and len(concern.evidence.pairs) == 3
    assert concern.evidence.winners["m/w"] == {"honest-1": "m", "honest-2": "m", "seat-a": None}
    assert res.details["member_position_bias"]["seat-a"]["first_seat_win_rate"] == 1.0
    assert res.details["member_position_bias"]["honest-1"]["first_seat_win_rate"] == 0.5
    # per member in the ledger: 3 pairs x 2 orders each, tokens and cost apart
    by = res.provenance.panel
    assert set(by) == {"honest-1", "honest-2", "seat-a"}
    assert all(t.calls == t.requests == 6 and t.model_requested == m for m, t in by.items())
    assert all(t.tokens.input == 60 and t.cost_usd == pytest.approx((60 * 1 + t.tokens.output * 2) / 1e6)
               for t in by.values())
    assert res.calls == 18 and res.cost_usd == pytest.approx(sum(t.cost_usd for t in by.values()))
    assert {c.member for c in res.provenance.calls} == {"honest-1", "honest-2", "seat-a"}


async def test_the_split_escalates_through_the_oracle(scripted_server):
    panel_server(scripted_server)
    cfg = panel_config(scripted_server, ["honest-1", "honest-2", "seat-a"], mode="pairwise")
    out = await Oracle(cfg).aevaluate({"task": {"id": "esc", "prompt": "p", "evaluator": "llm_judge"},
                                       "trajectories": [{"id": "m", "answer": "middle answer"},
                                                        {"id": "b", "answer": "best answer"}]})
    assert out.result.best == ["b"]
    assert out.escalation is not None and out.escalation.reason == "panel_disagreement"
    assert "seat-a=tie" in out.escalation.question and out.escalation.evidence["pairs"] == [["m", "b"]]


@pytest.mark.parametrize("how, expected", [("mean", (1 / 9 + 2 / 9 + 8 / 9) / 3), ("majority", 1 / 9)])
async def test_pointwise_mean_or_majority_per_criterion(scripted_server, how, expected):
    panel_server(scripted_server, {"honest-1": {"x": 2}, "honest-2": {"x": 3}, "seat-a": {"x": 9}})
    cfg = panel_config(scripted_server, ["honest-1", "honest-2", "seat-a"], panel_aggregate=how)
    res = await evaluate(cfg, ctx(cfg, Task(id="pw", prompt="p"), "x"))
    cand = res.candidates[0]
    assert res.status == Status.ok and cand.score == pytest.approx(expected) and res.calls == 3
    assert cand.details["criteria"]["overall"]["members"] == pytest.approx(
        {"honest-1": 1 / 9, "honest-2": 2 / 9, "seat-a": 8 / 9})
    agreement = res.details["panel"]["agreement"]["c0"]["overall"]
    assert agreement == {"spread": pytest.approx(7 / 9), "within": False}
    assert res.details["panel"]["scores"]["c0"]["seat-a"]["criteria"]["overall"]["score"] == 9
    concern = next(c for c in res.concerns if c.kind == "panel_disagreement")
    assert concern.evidence.spreads == {"c0": {"overall": pytest.approx(7 / 9)}}


async def test_members_within_the_threshold_raise_nothing(scripted_server):
    panel_server(scripted_server, {"honest-1": {"x": 7}, "honest-2": {"x": 8}})
    cfg = panel_config(scripted_server, ["honest-1", "honest-2"], temperature=0.0)
    res = await evaluate(cfg, ctx(cfg, Task(id="pw", prompt="p"), "x"))
    assert res.details["panel"]["agreement"]["c0"]["overall"]["within"] is True
    assert not any(c.kind == "panel_disagreement" for c in res.concerns)


async def test_member_temperature_over_the_judges(scripted_server):
    panel_server(scripted_server)
    cfg = OracleConfig(providers={"judge": scripted_server.provider_settings()}, llm_judge={
        "logprobs": False, "temperature": 0.2,
        "panel": [{"base_url": scripted_server.base_url, "model": "honest-1", "temperature": 0.9},
                  {"provider": "judge", "name": "the-judge"}]})
    res = await evaluate(cfg, ctx(cfg, Task(id="t", prompt="p"), "x"))
    temps = {r.json["model"]: r.json["temperature"] for r in scripted_server.requests}
    assert temps == {"honest-1": 0.9, scripted_server.provider_settings().model: 0.2}
    assert set(res.provenance.panel) == {"honest-1", "the-judge"}


def test_a_bad_panel_names_the_member_before_any_call(scripted_server):
    with pytest.raises(ValueError, match=r"llm_judge\.panel\.1") as info:
        OracleConfig(providers={"judge": scripted_server.provider_settings()},
                     llm_judge={"panel": [{"provider": "judge"}, {"provider": "nowhere"}]})
    assert "nowhere" in str(info.value)
    with pytest.raises(ValueError, match=r"panel"):
        OracleConfig(llm_judge={"panel": [{"provider": "judge"}]})
    assert scripted_server.requests == []


async def test_a_member_that_fails_entirely_is_left_out_and_reported(scripted_server):
    panel_server(scripted_server)
    dead = "http://127.0.0.1:9"  # discard port: nothing listens, the connection is refused
    cfg = OracleConfig(providers={"judge": scripted_server.provider_settings(max_retries=0)}, llm_judge={
        "logprobs": False, "mode": "pairwise",
        "panel": [{"base_url": scripted_server.base_url, "model": "honest-1"},
                  {"base_url": scripted_server.base_url, "model": "honest-2"},
                  {"base_url": dead, "model": "gone", "name": "gone"}]})
    res = await evaluate(cfg, ctx(cfg, Task(id="t", prompt="p"), "middle answer", "best answer", ids=["m", "b"]))
    assert res.status == Status.ok and res.best == ["b"]
    assert "gone" in res.details["panel"]["retired"] and "gone" in res.explanation
    assert res.provenance.panel["gone"].calls == 0 and res.provenance.panel["gone"].requests >= 1
    assert res.provenance.panel["honest-1"].calls == 2
    everyone_gone = OracleConfig(providers={"judge": scripted_server.provider_settings(max_retries=0)}, llm_judge={
        "logprobs": False, "panel": [{"base_url": dead, "model": "a"}, {"base_url": dead, "model": "b"}]})
    failed = await evaluate(everyone_gone, ctx(everyone_gone, Task(id="t", prompt="p"), "x"))
    assert failed.status == Status.failed and set(failed.details["panel"]["retired"]) == {"a", "b"}
