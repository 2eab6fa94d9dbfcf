"""``task.solution`` (the reference code the verifier validates its tests on) never reaches a judge:
every prompt builder of both judges is driven against the scripted wire-protocol server with a
task that carries a solution, and no request body the server received holds any of it."""

from __future__ import annotations

import json

import pytest

from oracle.config.model import DecisionJudgeConfig, OracleConfig, ProvidersConfig
from oracle.strategies.llm_judge.strategy import LLMJudge
from oracle._evaluators import evaluator_factory
from oracle.strategies.protocol import EvaluationContext
from oracle.tasks.questions import Question
from oracle.tasks.task import Task, Trajectory
from tests.plugins.scripted_server import chat_reply, decision_handler

MARK = "QZXSOLUTIONMARK"
SOLUTION = f"def capital():\n    return 'Paris'  # {MARK}\n"
PROMPT = "What is the capital of France?"
ANSWERS = ("Paris.", "Lyon.")
YES_A = chat_reply("A", logprobs=[("A", -0.5, {"Yes": -0.5, "No": -1.5, "A": -0.5, "B": -1.2, "C": -2.0})],
                   completion_tokens=1)

TASKS = {
    "criteria": dict(criteria=["Correct", "Concise"]),
    "score": dict(questions=[Question(id="q", type="score", instructions="How correct?", levels=["no", "yes"])]),
    "comparison": dict(questions=[Question(id="best", type="choice", instructions="Which is best?",
                                           options={"c0": "", "c1": ""})]),
    "claim": dict(context="Paris is the capital of France.", claim_check=True),
}


def _task(**extra) -> Task:
    return Task(id="t", prompt=PROMPT, reference="Paris", solution=SOLUTION, **extra)


def _bodies(server) -> list[str]:
    assert server.requests, "no request reached the server"
    return [req.body.decode("utf-8", "replace") if isinstance(req.body, bytes) else str(req.body)
            for req in server.requests]


def _assert_no_solution(server) -> None:
    bodies = _bodies(server)
    assert any("capital of France" in body for body in bodies)  # the task does reach the judge
    for body in bodies:
        assert MARK not in body and "def capital" not in body, body[:500]


@pytest.mark.parametrize("backend", ["logprob_readout", "sampled"])
@pytest.mark.parametrize("path", sorted(TASKS))
async def test_the_decision_judge_never_sends_the_solution(scripted_server, path, backend):
    judge = {"backend": backend, "samples": 2, "sample_temperature": 0.7} if backend == "sampled" else {}
    scripted_server.set_handler(lambda req: chat_reply("Yes") if backend == "sampled" else YES_A)
    n = 1 if path == "claim" else 2
    config = OracleConfig(providers=ProvidersConfig(judge=scripted_server.provider_settings(kind="openai")),
                          decision_judge=DecisionJudgeConfig(**judge))
    cands = tuple(Trajectory(id=f"c{i}", answer=a) for i, a in enumerate(ANSWERS[:n]))
    await evaluator_factory("decision_judge")().evaluate(
        EvaluationContext(task=_task(**TASKS[path]), trajectories=cands, config=config))
    _assert_no_solution(scripted_server)


@pytest.mark.parametrize("wire", ["systemone", "decisions"])
async def test_the_native_decision_wire_never_carries_the_solution(scripted_server, wire):
    scripted_server.set_handler(decision_handler())
    config = OracleConfig(providers=ProvidersConfig(
        judge=scripted_server.provider_settings(kind="openai"),
        decision=scripted_server.provider_settings(kind=wire, model="scripted-decider")))
    await evaluator_factory("decision_judge")().evaluate(EvaluationContext(
        task=_task(**TASKS["criteria"]), trajectories=(Trajectory(id="c0", answer="Paris."),), config=config))
    _assert_no_solution(scripted_server)


@pytest.mark.parametrize("mode", ["pointwise", "pairwise"])
async def test_the_llm_judge_never_sends_the_solution(scripted_server, mode):
    reply = (json.dumps({"criteria": {c: {"rationale": "r", "score": 5} for c in ("c1", "c2")}})
             if mode == "pointwise" else json.dumps({"rationale": "r", "winner": "A"}))
    scripted_server.set_handler(lambda req: chat_reply(reply))
    config = OracleConfig(providers={"judge": scripted_server.provider_settings()},
                          llm_judge={"logprobs": False, "mode": mode})
    cands = tuple(Trajectory(id=f"c{i}", answer=a) for i, a in enumerate(ANSWERS))
    await LLMJudge().evaluate(EvaluationContext(task=_task(criteria=["Correct", "Concise"]), trajectories=cands,
                                                config=config))
    _assert_no_solution(scripted_server)
