"""Evaluators read configuration only from their context, and the Oracle never edits their results."""

from __future__ import annotations

import asyncio
import json

import oracle._evaluators as evaluators_module
from oracle import Oracle
from oracle.config.model import OracleConfig
from oracle.results.result import EvaluationResult, Status
from oracle._evaluators import evaluator_factory
from oracle.strategies.protocol import EvaluationContext
from oracle.tasks.task import Task, TaskInput, Trajectory
from tests.plugins.scripted_server import chat_reply

TASK = Task(id="t-seam", prompt="Explain why the sky is blue.", criteria=["Correct"], evaluator="llm_judge")
ANSWERS = (Trajectory(id="a", answer="Rayleigh scattering."),)


class KeepsItsResult:
    """An evaluator that keeps the object it returned (a cache would) and leaves latency/provenance empty."""

    name = "keeps_result"
    version = "0.1"

    def __init__(self) -> None:
        self.returned: list[EvaluationResult] = []

    def spec(self, config: OracleConfig) -> dict:
        return {"name": self.name, "version": self.version}

    async def evaluate(self, ctx: EvaluationContext) -> EvaluationResult:
        result = EvaluationResult(evaluator="keeps_result", status=Status.ok, best=["a"], ranking=["a"])
        self.returned.append(result)
        return result


def test_the_oracle_fills_gaps_on_a_copy_never_on_the_evaluators_object(monkeypatch):
    keeper = KeepsItsResult()
    monkeypatch.setitem(evaluators_module._REGISTERED, "keeps_result", lambda: keeper)
    oracle = Oracle(OracleConfig())
    item = TaskInput(task=TASK, trajectories=list(ANSWERS))
    route = oracle.route(item)
    out = asyncio.run(oracle.run_evaluator(item, route, "keeps_result"))
    kept = keeper.returned[0]
    assert out is not kept
    assert out.latency_ms > 0 and out.provenance.config_hash == oracle.config.hash()
    assert out.provenance.evaluator == {"name": "keeps_result", "version": "0.1"}
    # The evaluator's own object is exactly what it made.
    assert kept.latency_ms == 0 or kept.latency_ms is None
    assert not kept.provenance.config_hash and not kept.provenance.evaluator


def test_built_in_evaluators_take_no_settings_at_construction():
    for kind in ("verifier", "decision_judge", "llm_judge"):
        factory = evaluator_factory(kind)
        assert factory is not None
        evaluator = factory()  # a factory takes no config: there is nothing to disagree with the context
        assert evaluator.spec(OracleConfig()) == {"name": kind, "version": evaluator.version}


def test_what_spec_reports_is_what_ran(scripted_server):
    """The judge runs with the context's settings, and its provenance records exactly spec(config)."""
    scripted_server.set_handler(lambda req: chat_reply(json.dumps(
        {"criteria": {"c1": {"rationale": "fine", "score": 4}}})))
    cfg = OracleConfig(providers={"judge": scripted_server.provider_settings()},
                       llm_judge={"logprobs": False, "repeats": 2})
    judge = evaluator_factory("llm_judge")()
    result = asyncio.run(judge.evaluate(EvaluationContext(task=TASK, trajectories=ANSWERS, config=cfg)))
    assert result.status == Status.ok
    assert len(scripted_server.requests) == 2  # repeats=2 from the context's config really ran
    assert result.provenance.evaluator == judge.spec(cfg)
    assert judge.spec(cfg)["repeats"] == 2 and "repeats" not in judge.spec(OracleConfig())
    assert scripted_server.settle_connections(0) == 0  # its own pool, closed when evaluate returned
