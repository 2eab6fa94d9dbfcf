"""Which model name goes to which endpoint, checked on the wire (the scripted server records bodies).

A model name is never carried from one provider to another: ``ORACLE_MODEL`` names the judge's
model only; the decision endpoint gets ``ORACLE_DECISION_MODEL``, or its own default (System One's
``jev-latest``; no ``model`` field for the Decisions format). ``ORACLE_DECISION_URL`` may be the base
URL or the full endpoint URL.
"""

from __future__ import annotations

import json

import pytest

from oracle.config.model import LOCAL_MODEL_ALIAS, SYSTEMONE_MODEL_ALIAS, OracleConfig, ProviderSettings
from oracle.errors import ConfigError
from oracle.results.result import Status
from oracle.strategies.decision_judge.strategy import DecisionJudge
from oracle.strategies.llm_judge.strategy import LLMJudge
from oracle.strategies.protocol import EvaluationContext
from oracle.tasks.task import Task, Trajectory
from tests.plugins.scripted_server import RecordedRequest, Reply, auto_reply, chat_reply

CAND = Trajectory(id="c1", answer="Could you send me your order number?")
QUESTION = Task(id="q", prompt="Customer: charged twice.", questions=[
    {"id": "team", "type": "choice", "instructions": "Which team?",
     "options": {"billing": "money", "technical": "bugs"}, "scores": {"billing": 5, "technical": 1}}])
ENV = ("ORACLE_BASE_URL", "ORACLE_MODEL", "ORACLE_API_KEY", "ORACLE_DECISION_URL", "ORACLE_DECISION_MODEL")


@pytest.fixture
def env(monkeypatch):
    for name in ENV:
        monkeypatch.delenv(name, raising=False)
    return monkeypatch


def _serve(request: RecordedRequest) -> Reply:
    if request.path.endswith("/chat/completions"):
        return chat_reply(json.dumps({"criteria": {"overall": {"rationale": "ok", "score": 6}}}))
    return auto_reply(request)


async def _decide(config: OracleConfig):
    return await DecisionJudge().evaluate(EvaluationContext(task=QUESTION, trajectories=(CAND,), config=config))


@pytest.mark.parametrize("suffix", ["/systemone", ""], ids=["full-url", "base-url"])
async def test_decision_endpoint_never_gets_the_judge_model(scripted_server, env, suffix):
    scripted_server.set_handler(_serve)
    env.setenv("ORACLE_BASE_URL", scripted_server.base_url)
    env.setenv("ORACLE_MODEL", "judge-model-x")
    env.setenv("ORACLE_DECISION_URL", scripted_server.base_url + suffix)
    config = OracleConfig.load()
    assert config.providers.decision.kind == "systemone"
    assert config.providers.decision.base_url == scripted_server.base_url

    result = await _decide(config)
    assert result.status == Status.ok, result.error
    (sent,) = scripted_server.requests
    assert sent.path == "/v1/systemone"
    assert sent.json["model"] == SYSTEMONE_MODEL_ALIAS                 # not judge-model-x, not the local one
    # the judge endpoint still gets ORACLE_MODEL
    await LLMJudge().evaluate(EvaluationContext(task=Task(id="t", prompt="p"), trajectories=(CAND,), config=config))
    chat = scripted_server.requests[-1]
    assert chat.path == "/v1/chat/completions" and chat.json["model"] == "judge-model-x"


async def test_decision_model_is_its_own_setting(scripted_server, env):
    scripted_server.set_handler(_serve)
    env.setenv("ORACLE_MODEL", "judge-model-x")
    env.setenv("ORACLE_DECISION_URL", scripted_server.base_url + "/systemone/")
    env.setenv("ORACLE_DECISION_MODEL", "decider-7")
    result = await _decide(OracleConfig.load())
    assert result.status == Status.ok, result.error
    assert scripted_server.requests[0].json["model"] == "decider-7"
    assert result.provenance.model_requested == "decider-7"


async def test_decisions_format_without_a_model_sends_none(scripted_server, env):
    scripted_server.set_handler(_serve)
    env.setenv("ORACLE_MODEL", "judge-model-x")
    env.setenv("ORACLE_DECISION_URL", scripted_server.base_url + "/decisions")
    config = OracleConfig.load()
    assert config.providers.decision.kind == "decisions" and config.providers.decision.model is None
    result = await _decide(config)
    assert result.status == Status.ok, result.error
    (sent,) = scripted_server.requests
    assert sent.path == "/v1/decisions" and "model" not in sent.json   # the server's default model


def test_the_local_model_name_only_goes_to_this_machine(env):
    assert ProviderSettings().model == LOCAL_MODEL_ALIAS
    assert ProviderSettings(base_url="http://localhost:9000/v1").model == LOCAL_MODEL_ALIAS
    with pytest.raises(ValueError, match="model: name the model"):
        ProviderSettings(base_url="https://api.example.com/v1")
    with pytest.raises(ValueError, match="model: name the model"):
        ProviderSettings(kind="anthropic", base_url="https://api.anthropic.com/v1")
    env.setenv("ORACLE_BASE_URL", "https://api.example.com/v1")
    with pytest.raises(ConfigError, match="providers.judge.*model: name the model"):
        OracleConfig.load()
    env.setenv("ORACLE_MODEL", "gpt-4o-mini")
    assert OracleConfig.load().providers.judge.model == "gpt-4o-mini"
