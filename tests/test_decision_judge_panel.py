"""The decision judge's panel, end to end over real HTTP: each member its own scripted server.

A panel of three where one member is wrong must give the two agreeing members' verdict and say
that the members split; a member that fails is reported and the others decide; a panel where
every member fails fails as one judge does; bad member settings are named before any request.
Also here: the cache salt of sampled requests (k samples must be k requests a cache can tell apart).
"""

from __future__ import annotations

import math

import pytest
from pydantic import ValidationError

from oracle.config.model import (DecisionJudgeConfig, OracleConfig, PanelMember, ProviderSettings,
                                 ProvidersConfig)
from oracle.providers.pool import ProviderPool
from oracle.results.concerns import PanelDisagreement
from oracle.results.result import Status
from oracle.strategies.decision_judge.strategy import DecisionJudge
from oracle.strategies.protocol import EvaluationContext
from oracle.tasks.questions import Question
from oracle.tasks.task import Criterion, Task, Trajectory
from tests.plugins.scripted_server import ScriptedServer, chat_reply, decision_handler, status_reply

CAND = Trajectory(id="c1", answer="Sorry about that! Could you send me your order number?")
TASK = Task(id="t", prompt="Customer: I was charged twice.", criteria=[
    Criterion(criterion="asks for the order number", weight=1),
    Criterion(criterion="apologizes", weight=1)])
NAMES = ("a", "b", "c")


@pytest.fixture
def trio():
    """Three scripted servers: one per panel member, so each member's requests are counted apart."""
    servers = [ScriptedServer().start() for _ in NAMES]
    try:
        yield dict(zip(NAMES, servers))
    finally:
        for server in servers:
            server.stop()


def _endpoint(server: ScriptedServer, kind: str, name: str) -> ProviderSettings:
    return server.provider_settings(kind=kind, model=f"model-{name}")


def _config(servers: dict[str, ScriptedServer], *, kind: str = "decisions", members=None, **judge) -> OracleConfig:
    """``providers.endpoints`` a, b, c (one per server) and a panel naming them."""
    first = next(iter(servers.values()))
    endpoints = {name: _endpoint(s, kind, name) for name, s in servers.items()}
    panel = members if members is not None else tuple(PanelMember(provider=name) for name in servers)
    return OracleConfig(providers=ProvidersConfig(judge=first.provider_settings(kind="openai"), endpoints=endpoints),
                        decision_judge=DecisionJudgeConfig(panel=panel, **judge))


async def _evaluate(config: OracleConfig, task: Task, *cands: Trajectory, extra=None, pool=None):
    ctx = EvaluationContext(task=task, trajectories=tuple(cands or (CAND,)), config=config, extra=extra or {},
                            providers=pool)
    return await DecisionJudge().evaluate(ctx)


def _script(servers, p_yes: dict[str, tuple[float, float]]):
    """Member name -> (P(yes) for criterion_0, for criterion_1), answered natively."""
    for name, (p0, p1) in p_yes.items():
        servers[name].set_handler(decision_handler(probabilities={"criterion_0": p0, "criterion_1": p1}))


# --- aggregation: one member wrong ---------------------------------------------------------------------

@pytest.mark.parametrize("how", ["mean", "majority"])
async def test_one_wrong_member_gives_the_two_agreeing_members_verdict_and_is_flagged(trio, how):
    _script(trio, {"a": (0.8, 0.7), "b": (0.8, 0.7), "c": (0.1, 0.2)})
    result = await _evaluate(_config(trio, panel_aggregate=how), TASK)
    assert result.status == Status.ok, result.error
    (cand,) = result.candidates
    assert cand.passed is True
    p0, p1 = [row["probability"] for row in cand.details["criteria"]]
    if how == "mean":
        assert (p0, p1) == pytest.approx(((0.8 + 0.8 + 0.1) / 3, (0.7 + 0.7 + 0.2) / 3))
    else:  # the majority's label, read at the mean of the members who chose it
        assert (p0, p1) == pytest.approx((0.8, 0.7))
    assert cand.details["criteria"][0]["probability_source"] == "panel"
    panel = cand.details["panel"]
    assert panel["members"] == ["model-a", "model-b", "model-c"] and panel["aggregate"] == how
    q0 = panel["questions"]["criterion_0"]
    assert q0["chosen"] == "yes" and q0["spread"] == pytest.approx(0.7)
    assert q0["agreement"] == pytest.approx(2 / 3) and q0["disagreement"] is True
    assert {m: row["label"] for m, row in q0["members"].items()} == {
        "model-a": "yes", "model-b": "yes", "model-c": "no"}
    assert q0["members"]["model-c"]["probabilities"] == pytest.approx({"yes": 0.1, "no": 0.9})
    assert panel["disagreed_questions"] == ["criterion_0", "criterion_1"]
    assert result.details["panel_disagreement"] is True
    # the typed concern, and the request escalation files from it
    (concern,) = [c for c in result.concerns if isinstance(c, PanelDisagreement)]
    assert concern.candidates == ["c1"] and concern.evidence.threshold == 0.3
    assert concern.evidence.members == ["model-a", "model-b", "model-c"]
    assert concern.evidence.spreads == {"c1": {"criterion_0": pytest.approx(0.7), "criterion_1": pytest.approx(0.5)}}
    assert "criterion_0 (model-a: yes, model-b: yes, model-c: no; spread 0.70)" in concern.message
    from oracle.config.model import EscalationConfig
    from oracle.escalation._triggers import result_triggers
    from oracle._oracle import Oracle
    requests = result_triggers(TASK, Oracle().route(TASK, [CAND]), result, EscalationConfig(), ["c1"])
    assert [r.reason for r in requests] == ["panel_disagreement"]
    assert "model-c: no" in requests[0].question and requests[0].blocking is False
    # one native call per member (both criteria in it), each in the one ledger under its label
    assert [len(s.requests) for s in trio.values()] == [1, 1, 1] and result.calls == 3
    prov = result.provenance
    assert {m: (t.calls, t.requests, t.model_requested) for m, t in prov.panel.items()} == {
        "model-a": (1, 1, "model-a"), "model-b": (1, 1, "model-b"), "model-c": (1, 1, "model-c")}
    assert sorted(c.member for c in prov.calls) == ["model-a", "model-b", "model-c"]  # in the order they completed
    assert prov.decision_backend == "panel" and prov.model_requested == "panel:model-a+model-b+model-c"
    assert result.details["panel_members"]["model-c"]["backend"] == "native"


async def test_the_same_verdict_as_the_two_honest_members_alone(trio):
    _script(trio, {"a": (0.8, 0.7), "b": (0.8, 0.7), "c": (0.1, 0.2)})
    three = await _evaluate(_config(trio, panel_aggregate="majority"), TASK)
    honest = await _evaluate(_config({k: trio[k] for k in ("a", "b")}, panel_aggregate="majority"), TASK)
    assert (three.candidates[0].passed, three.candidates[0].score) == (
        honest.candidates[0].passed, honest.candidates[0].score) == (True, pytest.approx(0.75))
    assert not [c for c in honest.concerns if isinstance(c, PanelDisagreement)]  # the honest two agree


async def test_a_confident_wrong_member_drags_the_mean_but_not_the_majority(trio):
    _script(trio, {"a": (0.6, 0.6), "b": (0.6, 0.6), "c": (0.0, 0.0)})
    mean = await _evaluate(_config(trio, panel_aggregate="mean"), TASK)
    majority = await _evaluate(_config(trio, panel_aggregate="majority"), TASK)
    assert mean.candidates[0].passed is False and mean.candidates[0].score == pytest.approx(0.4)
    assert majority.candidates[0].passed is True and majority.candidates[0].score == pytest.approx(0.6)


async def test_agreeing_members_raise_no_concern_and_a_wide_spread_alone_does(trio):
    _script(trio, {"a": (0.9, 0.9), "b": (0.85, 0.9), "c": (0.8, 0.9)})
    result = await _evaluate(_config(trio), TASK)
    assert result.candidates[0].details["panel"]["disagreement"] is False
    assert result.details["panel_disagreement"] is False
    assert not [c for c in result.concerns if isinstance(c, PanelDisagreement)]
    _script(trio, {"a": (0.95, 0.9), "b": (0.9, 0.9), "c": (0.55, 0.9)})  # all say yes; spread 0.4 > 0.3
    result = await _evaluate(_config(trio), TASK)
    q0 = result.candidates[0].details["panel"]["questions"]["criterion_0"]
    assert q0["agreement"] == 1.0 and q0["spread"] == pytest.approx(0.4) and q0["disagreement"] is True
    assert [c.evidence.spreads for c in result.concerns if isinstance(c, PanelDisagreement)] == [
        {"c1": {"criterion_0": pytest.approx(0.4)}}]
    result = await _evaluate(_config(trio, panel_disagreement=0.45), TASK)
    assert not [c for c in result.concerns if isinstance(c, PanelDisagreement)]


async def test_no_majority_is_unparsed_never_a_guess(trio):
    pair = {k: trio[k] for k in ("a", "b")}
    _script(pair, {"a": (0.9, 0.9), "b": (0.2, 0.9)})
    result = await _evaluate(_config(pair, panel_aggregate="majority"), TASK)
    (cand,) = result.candidates
    assert cand.status == Status.unparsed and cand.score is None and cand.passed is None
    assert "no majority" in cand.details["unparsed_questions"]["criterion_0"]["reason"]
    assert {c.kind for c in result.concerns} >= {"unparsed", "panel_disagreement"}


async def test_no_member_answering_a_question_is_unparsed(trio):
    """Both members' readouts put their mass on another token (below the coverage floor)."""
    pair = {k: trio[k] for k in ("a", "b")}
    off_label = {"I": math.log(0.99), "Yes": math.log(0.01)}
    for server in pair.values():
        server.set_handler(lambda r: chat_reply("I", logprobs=[("I", off_label["I"], off_label)]))
    result = await _evaluate(_config(pair, kind="openai"), TASK)
    (cand,) = result.candidates
    assert result.status == Status.unparsed and cand.score is None and cand.passed is None
    reason = cand.details["unparsed_questions"]["criterion_0"]["reason"]
    assert reason.startswith("no panel member answered") and "model-a: unparsed" in reason
    assert "coverage_floor" in reason
    assert cand.details["panel"]["questions"]["criterion_0"]["left_out"] == ["model-a", "model-b"]


# --- members on chat endpoints: logprob readout, each member its own calls ------------------------------

def _readout_handler(p_yes: dict[str, float]):
    """A chat endpoint answering a readout: P(Yes) by the criterion named in the prompt."""
    def handle(request):
        text = request.json["messages"][-1]["content"]
        p = next(p for needle, p in p_yes.items() if needle in text)
        top = {"Yes": math.log(p), "No": math.log(1 - p)}
        token = "Yes" if p >= 0.5 else "No"
        return chat_reply(token, logprobs=[(token, top[token], top)], completion_tokens=1,
                          model=request.json["model"])
    return handle


async def test_chat_members_are_read_by_logprobs_each_through_its_own_endpoint(trio):
    for name, p in {"a": 0.9, "b": 0.8, "c": 0.2}.items():
        trio[name].set_handler(_readout_handler({"order number": p, "apologizes": 0.7}))
    members = tuple(PanelMember(base_url=s.base_url, model=f"chat-{n}", name=n.upper()) for n, s in trio.items())
    result = await _evaluate(_config(trio, members=members), TASK)
    assert result.status == Status.ok, result.error
    q0 = result.candidates[0].details["panel"]["questions"]["criterion_0"]
    assert {m: (row["label"], row["probability_source"]) for m, row in q0["members"].items()} == {
        "A": ("yes", "logprob_readout"), "B": ("yes", "logprob_readout"), "C": ("no", "logprob_readout")}
    assert result.candidates[0].details["criteria"][0]["probability"] == pytest.approx((0.9 + 0.8 + 0.2) / 3)
    # one 1-token readout per criterion per member, to that member's server with its model
    for name, server in trio.items():
        assert len(server.requests) == 2
        assert {r.json["model"] for r in server.requests} == {f"chat-{name}"}
        assert all(r.json["max_tokens"] == 1 and r.json["logprobs"] for r in server.requests)
    assert {m: t.calls for m, t in result.provenance.panel.items()} == {"A": 2, "B": 2, "C": 2}
    assert result.details["panel_members"]["A"]["backend"] == "logprob_readout"


async def test_a_panel_judges_questions_and_comparisons_too(trio):
    choice = Question(id="team", type="choice", instructions="Which team should handle it?",
                      options={"billing": "", "technical": ""}, scores={"billing": 5, "technical": 1})
    for name, p in {"a": 0.8, "b": 0.7, "c": 0.1}.items():
        trio[name].set_handler(decision_handler(probabilities={"team": {"billing": p, "technical": 1 - p}}))
    result = await _evaluate(_config(trio, panel_aggregate="majority"), Task(id="t", prompt="p", questions=[choice]))
    row = result.candidates[0].details["questions"][0]
    assert row["selected"] == "billing" and row["probabilities"]["billing"] == pytest.approx(0.75)
    assert result.candidates[0].details["panel"]["questions"]["team"]["members"]["model-c"]["label"] == "technical"
    assert [len(s.requests) for s in trio.values()] == [1, 1, 1]
    for server in trio.values():
        server.clear()
    # a comparison: member c prefers whichever candidate is listed first, the others prefer x
    compare = Question(id="best", type="choice", instructions="Which reply is best?", options={"x": "", "y": ""})

    def first_listed(request):
        q = request.json["questions"][0]
        first = q["choices"][0]["value"]
        return decision_handler(probabilities={"best": {first: 0.9, ({"x", "y"} - {first}).pop(): 0.1}})(request)
    trio["c"].set_handler(first_listed)
    for name in ("a", "b"):
        trio[name].set_handler(decision_handler(probabilities={"best": {"x": 0.8, "y": 0.2}}))
    result = await _evaluate(_config(trio), Task(id="t", prompt="p", questions=[compare]),
                             Trajectory(id="y", answer="meh"), Trajectory(id="x", answer="good"))
    assert result.status == Status.ok and result.best == ["x"]
    panel = result.details["panel"]
    assert panel["forward"]["questions"]["best"]["members"]["model-c"]["label"] == "y"
    assert panel["backward"]["questions"]["best"]["disagreement"] is False
    (concern,) = [c for c in result.concerns if isinstance(c, PanelDisagreement)]
    assert set(concern.candidates) == {"x", "y"} and len(concern.evidence.pairs) == 1
    assert concern.evidence.winners["best (forward)"] == {"model-a": "x", "model-b": "x", "model-c": "y"}
    assert [len(s.requests) for s in trio.values()] == [2, 2, 2]  # both orders, each member


async def test_a_panel_checks_a_claim(trio):
    for name, support in {"a": 0.9, "b": 0.85, "c": 0.2}.items():
        trio[name].set_handler(decision_handler(probabilities={"claim_supported": support, "claim_challenged": 0.1}))
    task = Task(id="opening", prompt="When did the store open?", context="It opened in March 2019.",
                claim_check=True)
    result = await _evaluate(_config(trio, panel_aggregate="majority"), task,
                             Trajectory(id="r1", answer="It opened in 2019."))
    (cand,) = result.candidates
    assert cand.passed is True and cand.details["claim_check"]["support"] == pytest.approx(0.875)
    assert cand.details["panel"]["disagreed_questions"] == ["claim_supported"]
    assert [len(s.requests) for s in trio.values()] == [1, 1, 1]  # both questions in one native call each


# --- faults -------------------------------------------------------------------------------------------

async def test_a_failing_member_is_reported_and_the_others_decide(trio):
    _script(trio, {"a": (0.8, 0.7), "b": (0.9, 0.6)})
    trio["c"].set_handler(lambda r: status_reply(500, message="member c down"))
    result = await _evaluate(_config(trio), TASK)
    assert result.status == Status.ok, result.error
    (cand,) = result.candidates
    assert cand.passed is True and cand.score == pytest.approx(((0.8 + 0.9) / 2 + (0.7 + 0.6) / 2) / 2)
    panel = cand.details["panel"]
    assert panel["left_out"] == {"model-c": ["criterion_0", "criterion_1"]}
    row = panel["questions"]["criterion_0"]["members"]["model-c"]
    assert row["status"] == "failed" and row["error"]["status"] == 500
    assert panel["disagreement"] is False  # a member that did not answer is not a dissent
    totals = result.provenance.panel
    assert (totals["model-c"].calls, totals["model-c"].requests) == (0, 3)  # 1 + max_retries=2
    assert (totals["model-a"].calls, totals["model-a"].requests) == (1, 1)
    assert [f.member for f in result.provenance.failed_calls] == ["model-c"]
    assert len(trio["c"].requests) == 3 and result.calls == 5


async def test_every_member_failing_fails_as_one_judge(trio):
    for server in trio.values():
        server.set_handler(lambda r: status_reply(500, message="down"))
    result = await _evaluate(_config(trio), TASK)
    assert result.status == Status.failed and result.error.type == "ProviderHTTPError"
    assert "500" in result.error.message
    assert [len(s.requests) for s in trio.values()] == [3, 3, 3] and result.calls == 9
    assert sorted(f.member for f in result.provenance.failed_calls) == ["model-a", "model-b", "model-c"]


async def test_members_that_refuse_are_left_out_and_a_unanimous_refusal_is_a_refusal(trio):
    _script(trio, {"a": (0.8, 0.7), "b": (0.8, 0.7)})
    trio["c"].set_handler(decision_handler(refuse={"criterion_0": "no opinion", "criterion_1": "no opinion"}))
    result = await _evaluate(_config(trio), TASK)
    q0 = result.candidates[0].details["panel"]["questions"]["criterion_0"]
    assert q0["members"]["model-c"] == {"status": "refused", "reason": "no opinion"}
    assert result.candidates[0].passed is True and q0["disagreement"] is True
    for server in trio.values():
        server.set_handler(decision_handler(refuse={"criterion_0": "no opinion"},
                                            probabilities={"criterion_1": 0.9}))
    result = await _evaluate(_config(trio), TASK)
    assert result.status == Status.abstained and result.details["refused"] is True
    assert "decision_refusal" in [c.kind for c in result.concerns]


# --- bad panel settings: named, before any request ---------------------------------------------------

def test_an_unknown_member_provider_is_named_at_config_load(trio):
    with pytest.raises(ValidationError, match=r"decision_judge\.panel\.1"):
        _config(trio, members=(PanelMember(provider="a"), PanelMember(provider="nope")))


@pytest.mark.parametrize(("kind", "members", "judge", "needle"), [
    ("decisions", None, {"backend": "sampled"}, "decision_judge.panel.0"),
    ("openai", None, {"backend": "native"}, "decision_judge.panel.0"),
    ("openai", (PanelMember(provider="a"), PanelMember(provider="b"), PanelMember(provider="c", temperature=0)),
     {}, "decision_judge.panel.2.temperature"),
    ("decisions", (PanelMember(provider="a", temperature=0.5), PanelMember(provider="b")), {},
     "decision_judge.panel.0.temperature"),
])
async def test_a_member_this_judge_cannot_ask_is_named_before_any_request(trio, kind, members, judge, needle):
    result = await _evaluate(_config(trio, kind=kind, members=members, **judge), TASK)
    assert result.status == Status.failed and result.error.type == "ConfigError"
    assert needle in result.error.message
    assert [s.requests for s in trio.values()] == [[], [], []] and result.calls == 0


# --- the cache salt: k samples are k distinct requests ------------------------------------------------

class _Recorded:
    """The pool's own client for an endpoint, its requests recorded on their way to the real server."""

    def __init__(self, client, method: str) -> None:
        self.requests: list = []
        real = getattr(client, method)

        async def record(request):
            self.requests.append(request)
            return await real(request)
        setattr(client, method, record)


async def test_each_sample_carries_its_own_salt_and_the_run_repeat(trio):
    server = trio["a"]
    server.set_handler(lambda r: chat_reply("Yes"))
    config = OracleConfig(providers=ProvidersConfig(judge=server.provider_settings(kind="openai")),
                          decision_judge=DecisionJudgeConfig(backend="sampled", samples=4))
    task = Task(id="t", prompt="p", criteria=["asks for the order number"])
    for repeat, extra in ((0, {}), (2, {"run_repeat": 2})):
        async with ProviderPool() as pool:
            spy = _Recorded(pool.chat(config.providers.judge, config.providers.prices), "complete")
            result = await _evaluate(config, task, extra={"repeat": repeat}, pool=pool)
        assert result.status == Status.ok and result.calls == 4
        assert [r.cache_salt for r in spy.requests] == [{"sample": i, **extra} for i in range(4)]
        assert "cache_salt" not in server.requests[-1].json  # never sent on the wire
    # the readout and the native path carry the run repeat only, and nothing at repeat 0
    server.set_handler(lambda r: chat_reply("Yes", logprobs=[("Yes", -0.1, {"Yes": -0.1, "No": -2.4})]))
    readout = config.model_copy(update={"decision_judge": DecisionJudgeConfig()})
    for repeat, salt in ((0, None), (3, {"run_repeat": 3})):
        async with ProviderPool() as pool:
            spy = _Recorded(pool.chat(readout.providers.judge, readout.providers.prices), "complete")
            await _evaluate(readout, task, extra={"repeat": repeat}, pool=pool)
        assert [r.cache_salt for r in spy.requests] == [salt]
    native = OracleConfig(providers=ProvidersConfig(judge=server.provider_settings(kind="openai"),
                                                    decision=server.provider_settings(kind="systemone")))
    server.set_handler(decision_handler())
    for repeat, salt in ((0, None), (1, {"run_repeat": 1})):
        async with ProviderPool() as pool:
            spy = _Recorded(pool.decision(native.providers.decision, native.providers.prices), "decide")
            await _evaluate(native, task, extra={"repeat": repeat}, pool=pool)
        assert [r.cache_salt for r in spy.requests] == [salt]


async def test_sampled_panel_members_salt_each_sample_and_count_apart(trio):
    pair = {k: trio[k] for k in ("a", "b")}
    pair["a"].set_handler(lambda r: chat_reply("Yes"))
    pair["b"].set_handler(lambda r: chat_reply("No"))
    config = _config(pair, kind="openai", backend="sampled", samples=3, panel_aggregate="mean")
    task = Task(id="t", prompt="p", criteria=["asks for the order number"])
    async with ProviderPool() as pool:
        spies = {n: _Recorded(pool.chat(config.providers.endpoints[n], config.providers.prices), "complete")
                 for n in pair}
        result = await _evaluate(config, task, pool=pool)
    assert {n: [r.cache_salt for r in s.requests] for n, s in spies.items()} == {
        n: [{"sample": i} for i in range(3)] for n in pair}
    assert {m: t.calls for m, t in result.provenance.panel.items()} == {"model-a": 3, "model-b": 3}
    assert result.provenance.samples == 3
    q0 = result.candidates[0].details["panel"]["questions"]["criterion_0"]
    assert q0["members"]["model-a"]["probabilities"] == {"yes": 1.0, "no": 0.0}
    assert result.candidates[0].details["criteria"][0]["probability"] == pytest.approx(0.5)


async def test_k_samples_are_k_cache_entries_and_a_rerun_reproduces_them(trio, tmp_path):
    from oracle.providers._cache import ResponseCache

    server = trio["a"]
    texts = iter(["Yes", "No", "Yes", "Yes"])
    server.set_handler(lambda r: chat_reply(next(texts)))
    cache = tmp_path / "cache.sqlite"
    config = OracleConfig(providers=ProvidersConfig(judge=server.provider_settings(kind="openai",
                                                                                  cache_path=str(cache))),
                          decision_judge=DecisionJudgeConfig(backend="sampled", samples=4))
    task = Task(id="t", prompt="p", criteria=["asks for the order number"])
    first = await _evaluate(config, task)
    assert len(server.requests) == 4 and len(ResponseCache(cache)) == 4
    again = await _evaluate(config, task)
    assert len(server.requests) == 4 and again.provenance.cached_calls == 4   # no request: all 4 hits
    p = [r.candidates[0].details["criteria"][0]["probability"] for r in (first, again)]
    assert p[0] == p[1] == pytest.approx(0.75)  # the 4 samples, not one sample 4 times


# --- the docs page's example --------------------------------------------------------------------------

def test_the_docs_panel_example_loads_and_plans_three_members(tmp_path):
    import re
    from pathlib import Path

    from oracle.providers.clients import chat_format
    from oracle.strategies.decision_judge.panel import plan_members

    page = (Path(__file__).resolve().parent.parent / "docs" / "decision-judge.md").read_text(encoding="utf-8")
    section = page.split("## Panels", 1)[1].split("\n## ", 1)[0]
    (block,) = re.findall(r"^```yaml\n(.*?)^```", section, re.MULTILINE | re.DOTALL)
    path = tmp_path / "oracle.yaml"
    path.write_text(block, encoding="utf-8")
    config = OracleConfig.load(path, env=False)
    judge = config.decision_judge
    assert (len(judge.panel), judge.panel_aggregate, judge.panel_disagreement) == (3, "majority", 0.3)
    plans = plan_members(judge, config.providers, lambda s: chat_format(s).capabilities().logprobs)
    assert [(p.label, p.kind) for p in plans] == [
        ("jev-latest", "native"), ("meta-llama/llama-3.1-8b-instruct", "logprob_readout"),
        ("gpt-4o-mini", "logprob_readout")]
