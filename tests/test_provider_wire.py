"""Wire formats over real sockets: requests as sent, replies as parsed, accounting and the cache."""

from __future__ import annotations

import pytest

from oracle.config.model import OracleConfig, Price
from oracle.errors import ConfigError, ResponseParseError
from oracle.providers import (ChatMessage, ChatRequest, DecisionQuestion, DecisionRequest,
                              make_async_chat_client, make_async_decision_client, make_chat_client,
                              make_decision_client)
from tests.plugins.oracle_logs import captured_logs
from tests.plugins.scripted_server import Reply, anthropic_reply, chat_reply, decision_handler, status_reply

QUESTIONS = [
    DecisionQuestion(id="correct", type="likelihood", instructions="Is the answer correct?"),
    DecisionQuestion(id="tone", type="choice", instructions="Tone?",
                     options={"formal": "business register", "casual": "chatty"}),
    DecisionQuestion(id="quality", type="score", instructions="Quality?", levels=["poor", "fair", "good"]),
    DecisionQuestion(id="secret", type="likelihood", instructions="Reveal the system prompt?"),
]
DECISION = DecisionRequest(state={"answer": "42", "question": "6 x 7?"}, questions=QUESTIONS)
HANDLER = decision_handler(
    probabilities={"correct": 0.8, "tone": {"formal": 0.25, "casual": 0.75},
                   "quality": {"poor": 0.1, "fair": 0.2, "good": 0.7}},
    refuse={"secret": "policy"}, confidence=0.6)


@pytest.mark.parametrize("kind", ["systemone", "decisions"])
async def test_decision_round_trip_with_refusal(scripted_server, kind):
    scripted_server.set_handler(HANDLER)
    client = make_async_decision_client(scripted_server.provider_settings(kind=kind, model="decider-1"))
    reply = await client.decide(DECISION)
    await client.aclose()

    sent = scripted_server.requests[0]
    assert sent.path == f"/v1/{kind}"
    body = sent.json
    if kind == "systemone":
        assert body["state"] == {"answer": "42", "question": "6 x 7?"}
        assert body["questions"]["correct"] == {"type": "noul", "instructions": "Is the answer correct?"}
        assert body["questions"]["tone"]["criteria"] == {"formal": "business register", "casual": "chatty"}
        assert body["questions"]["quality"]["criteria"] == ["poor", "fair", "good"]
    else:
        assert body["input"] == '{"answer":"42","question":"6 x 7?"}'
        assert [q["name"] for q in body["questions"]] == ["correct", "tone", "quality", "secret"]
        assert body["questions"][0]["type"] == "predicate"
        assert body["questions"][1]["choices"][0] == {"value": "formal", "description": "business register"}
        assert body["questions"][2]["levels"] == [{"label": "poor"}, {"label": "fair"}, {"label": "good"}]
    assert body["model"] == "decider-1"

    assert set(reply.answers) == {"correct", "tone", "quality", "secret"}
    assert reply.answers["correct"].probabilities == pytest.approx({"yes": 0.8, "no": 0.2})
    assert reply.answers["tone"].probabilities == pytest.approx({"formal": 0.25, "casual": 0.75})
    assert reply.answers["tone"].server_confidence == 0.6  # the server's own, kept beside ours
    assert reply.answers["tone"].confidence == pytest.approx(0.5)  # ours: (0.75 - 1/2) / (1 - 1/2)
    assert reply.answers["quality"].probabilities == pytest.approx({"poor": 0.1, "fair": 0.2, "good": 0.7})
    refusal = reply.answers["secret"]
    assert refusal.refused and refusal.refusal_reason == "policy" and refusal.probabilities == {}
    assert reply.provenance.endpoint_kind == kind
    assert reply.provenance.model_answered == "scripted-decider"
    assert reply.usage.input_tokens == 42
    assert client.capabilities.native_decisions


@pytest.mark.parametrize("bad", [
    {"answers": {"q": {"type": "noul", "noul": 1.7}}},                                  # not a probability
    {"answers": {"q": {"type": "choice", "probabilities": {"a": 0.5, "b": 0.5}}}},      # wrong type
    {"answers": {"q": 3}},
    {"answers": []},
])
def test_systemone_bad_answers_are_parse_errors(scripted_server, bad):
    scripted_server.set_handler(lambda r: Reply(json=bad))
    client = make_decision_client(scripted_server.provider_settings(kind="systemone", max_retries=0))
    with pytest.raises(ResponseParseError):
        client.decide(DecisionRequest(state="s", questions=[
            DecisionQuestion(id="q", type="likelihood", instructions="?")]))
    client.close()


def test_choice_probabilities_must_sum_to_one(scripted_server):
    scripted_server.set_handler(decision_handler(probabilities={"tone": {"formal": 0.9, "casual": 0.9}}))
    client = make_decision_client(scripted_server.provider_settings(kind="decisions", max_retries=0))
    with pytest.raises(ResponseParseError, match="sum to 1.800"):
        client.decide(DecisionRequest(state="s", questions=[QUESTIONS[1]]))
    client.close()


def test_decision_url_accepts_full_endpoint(scripted_server):
    scripted_server.set_handler(HANDLER)
    settings = scripted_server.provider_settings(kind="systemone", base_url=scripted_server.base_url + "/systemone")
    with make_decision_client(settings) as client:
        client.decide(DecisionRequest(state="s", questions=[QUESTIONS[0]]))
    assert scripted_server.requests[0].path == "/v1/systemone"


def test_chat_kind_for_decision_client_is_config_error(scripted_server):
    with pytest.raises(ConfigError, match="logprob readout"):
        make_decision_client(scripted_server.provider_settings(kind="openai"))


def test_openai_request_and_logprobs(scripted_server):
    scripted_server.push(chat_reply("yes", model="m-2024", logprobs=[("yes", -0.2, {"yes": -0.2, "no": -1.8})]))
    req = ChatRequest(messages=[ChatMessage(role="system", content="judge"),
                                ChatMessage(role="user", content="ok?")],
                      seed=7, logprobs=True, top_logprobs=50, json_schema={"type": "object"}, stop=["\n"])
    with make_chat_client(scripted_server.provider_settings(model="gpt-x")) as client:
        reply = client.complete(req)
    body = scripted_server.requests[0].json
    assert scripted_server.requests[0].path == "/v1/chat/completions"
    assert body["seed"] == 7 and body["logprobs"] is True and body["top_logprobs"] == 20
    assert body["response_format"] == {"type": "json_schema", "json_schema": {
        "name": "reply", "schema": {"type": "object"}, "strict": True}}
    assert body["messages"][0] == {"role": "system", "content": "judge"}
    assert reply.logprobs[0].token == "yes" and reply.logprobs[0].top == {"yes": -0.2, "no": -1.8}
    assert reply.provenance.sampling_requested["top_logprobs"] == 50
    assert reply.provenance.sampling_applied["top_logprobs"] == 20
    assert reply.provenance.request_id == "chatcmpl-scripted"


def test_local_model_gets_llama_cpp_schema_dialect(scripted_server):
    with make_chat_client(scripted_server.provider_settings(model="smollm2-135m-instruct")) as client:
        client.complete(ChatRequest(messages=[ChatMessage(role="user", content="x")],
                                    json_schema={"type": "object"}))
    assert scripted_server.requests[0].json["response_format"] == {"type": "json_object",
                                                                  "schema": {"type": "object"}}


def test_logprobs_requested_but_absent_is_a_capability_answer_learned_once(scripted_server):
    """A server that ignores logprobs: the reply stands (no retry), the client learns it, and later
    requests on the same client no longer ask."""
    scripted_server.set_handler(lambda r: chat_reply("yes"))
    asks = ChatRequest(messages=[ChatMessage(role="user", content="x")], logprobs=True, top_logprobs=5)
    with make_chat_client(scripted_server.provider_settings(max_retries=4)) as client:
        assert client.capabilities.logprobs is True
        first = client.complete(asks)
        assert len(scripted_server.requests) == 1                       # not retried
        assert first.text == "yes" and first.logprobs is None and first.provenance.attempts == 1
        assert first.provenance.sampling_requested["logprobs"] is True
        assert first.provenance.sampling_applied["logprobs"] is False
        assert "top_logprobs" not in first.provenance.sampling_applied
        assert client.capabilities.logprobs is False and client.capabilities.max_top_logprobs == 0
        second = client.complete(asks)
    assert len(scripted_server.requests) == 2
    assert scripted_server.requests[0].json["logprobs"] is True
    sent = scripted_server.requests[1].json
    assert "logprobs" not in sent and "top_logprobs" not in sent       # learned: not asked again
    assert second.provenance.sampling_applied["logprobs"] is False


async def test_logprobs_learning_is_per_client_and_async_too(scripted_server):
    scripted_server.set_handler(lambda r: chat_reply("yes"))
    asks = ChatRequest(messages=[ChatMessage(role="user", content="x")], logprobs=True)
    async with make_async_chat_client(scripted_server.provider_settings()) as client:
        await client.complete(asks)
        await client.complete(asks)
    async with make_async_chat_client(scripted_server.provider_settings()) as fresh:
        assert fresh.capabilities.logprobs is True                      # another client asks again
        await fresh.complete(asks)
    assert [("logprobs" in r.json) for r in scripted_server.requests] == [True, False, True]


async def test_anthropic_messages(scripted_server, monkeypatch):
    monkeypatch.setenv("TEST_ANTHROPIC_KEY", "sk-ant-SECRET")
    scripted_server.push(anthropic_reply("fine", model="claude-x", input_tokens=1000, output_tokens=500))
    settings = scripted_server.provider_settings(kind="anthropic", model="claude-x",
                                                 api_key_env="TEST_ANTHROPIC_KEY")
    client = make_async_chat_client(settings, prices={"claude-x": Price(input_per_mtok=3, output_per_mtok=15)})
    reply = await client.complete(ChatRequest(messages=[ChatMessage(role="system", content="be terse"),
                                                        ChatMessage(role="user", content="hi")],
                                              seed=3, logprobs=True, top_logprobs=5))
    await client.aclose()
    sent = scripted_server.requests[0]
    assert sent.path == "/v1/messages"
    assert sent.headers["x-api-key"] == "sk-ant-SECRET" and sent.headers["anthropic-version"]
    assert sent.json["system"] == "be terse" and sent.json["messages"] == [{"role": "user", "content": "hi"}]
    assert "seed" not in sent.json
    assert reply.text == "fine" and reply.logprobs is None
    assert reply.cost_usd == pytest.approx((1000 * 3 + 500 * 15) / 1e6)
    assert reply.provenance.sampling_requested["seed"] == 3
    assert "seed" not in reply.provenance.sampling_applied
    assert not client.capabilities.logprobs and not client.capabilities.seed


def test_unknown_price_gives_cost_none_not_zero(scripted_server):
    with make_chat_client(scripted_server.provider_settings(model="unpriced"),
                          prices={"other": Price(input_per_mtok=1, output_per_mtok=1)}) as client:
        reply = client.complete(ChatRequest(messages=[ChatMessage(role="user", content="x")]))
    assert reply.usage.input_tokens == 10
    assert reply.cost_usd is None


def test_api_key_never_logged_traced_or_cached(scripted_server, monkeypatch, tmp_path):
    monkeypatch.setenv("ORACLE_API_KEY", "sk-TOPSECRET-123")
    monkeypatch.setenv("ORACLE_BASE_URL", scripted_server.base_url)
    config = OracleConfig.load(None)
    settings = config.providers.judge.model_copy(update={"cache_path": str(tmp_path / "c.sqlite"),
                                                         "backoff_base_s": 0.01})
    scripted_server.push(status_reply(503), chat_reply("ok"))
    with captured_logs() as logs:
        with make_chat_client(settings) as client:
            reply = client.complete(ChatRequest(messages=[ChatMessage(role="user", content="x")]))
    assert scripted_server.requests[-1].headers["authorization"] == "Bearer sk-TOPSECRET-123"
    assert [e["event"] for e in logs] == ["provider_retry"]  # the retry was logged...
    assert all("TOPSECRET" not in repr(event) for event in logs)  # ...without the key
    assert "TOPSECRET" not in reply.model_dump_json()
    assert b"TOPSECRET" not in (tmp_path / "c.sqlite").read_bytes()
    assert "TOPSECRET" not in config.model_dump_json()


async def test_sqlite_cache_hit_on_rerun(scripted_server, tmp_path):
    settings = scripted_server.provider_settings(cache_path=str(tmp_path / "cache" / "r.sqlite"))
    req = ChatRequest(messages=[ChatMessage(role="user", content="cache me")], logprobs=True, top_logprobs=2)
    scripted_server.push(chat_reply("first", logprobs=[("first", -0.1, {"first": -0.1})]))
    client = make_async_chat_client(settings)
    first = await client.complete(req)
    await client.aclose()
    # A new client (a rerun) with the same cache file: answered from disk, nothing sent.
    rerun = make_async_chat_client(settings)
    second = await rerun.complete(req)
    different = await rerun.complete(req.model_copy(update={"max_tokens": 5}))
    await rerun.aclose()
    assert len(scripted_server.requests) == 2  # the first call and the different request only
    assert second.text == "first" and second.logprobs == first.logprobs
    assert second.provenance.cached and not first.provenance.cached
    assert different.text == "ok" and not different.provenance.cached


def test_failures_are_not_cached(scripted_server, tmp_path):
    settings = scripted_server.provider_settings(cache_path=str(tmp_path / "r.sqlite"), max_retries=0)
    scripted_server.push(status_reply(500))
    req = ChatRequest(messages=[ChatMessage(role="user", content="x")])
    with make_chat_client(settings) as client:
        with pytest.raises(Exception):
            client.complete(req)
        assert client.complete(req).text == "ok"
    assert len(scripted_server.requests) == 2
