"""Logprob readout against the real embedded model (llama.cpp + SmolLM2-135M).

The tiny model's judgments are not the point; the mechanics are: the label probabilities come from
real top_logprobs, sum to 1 over the labels, and the covered mass is what the model really put on
the labels (strictly between 0 and 1 for a model that also wants to say other things).
"""

from __future__ import annotations

import pytest

from oracle.config.model import OracleConfig, ProvidersConfig
from oracle.tasks.questions import Question, QuestionInputs
from oracle.results.result import Status
from oracle.strategies.protocol import EvaluationContext
from oracle.tasks.task import Task, Trajectory
from oracle.strategies.decision_judge.strategy import DecisionJudge

pytestmark = [pytest.mark.local_model, pytest.mark.slow]

REPLY = Trajectory(id="r1", answer="I'm sorry for the double charge! Could you send me your order number?")


def _config(local_model, coverage_floor: float = 0.0) -> OracleConfig:
    """The mechanics tests read whatever mass the tiny model puts on the labels (floor 0); the
    default floor's verdict on the same model is tested on its own below."""
    return OracleConfig(providers=ProvidersConfig(judge=local_model.provider_settings()),
                        decision_judge={"coverage_floor": coverage_floor})


async def test_readout_probabilities_over_labels_sum_to_one_and_mass_is_recorded(local_model):
    task = Task(id="t", prompt="Customer: I was charged twice for my order.", questions=[
        Question(id="order_number", type="likelihood",
                 instructions="Does the reply ask the customer for their order number?"),
        Question(id="politeness", type="score", instructions="How polite is the reply?",
                 levels=["rude", "neutral", "polite"], inputs=QuestionInputs(task=[], candidate=["answer"])),
    ])
    config = _config(local_model)
    result = await DecisionJudge().evaluate(
        EvaluationContext(task=task, trajectories=(REPLY,), config=config))
    assert result.status in (Status.ok, Status.unparsed), result.error
    assert result.details["backend"] == "logprob_readout"
    assert result.provenance.models_answered == [local_model.model]
    assert result.calls == 2 and all(c.call_id for c in result.provenance.calls)
    for q in result.candidates[0].details["questions"]:
        if q.get("unparsed"):
            continue  # the tiny model may put no top-20 mass on any label; that is reported, not guessed
        assert q["probability_source"] == "logprob_readout"
        assert sum(q["probabilities"].values()) == pytest.approx(1.0)
        assert 0.0 < q["covered_mass"] <= 1.0
        assert set(q["probabilities"]) == set(q["option_order"])
    parsed = [q for q in result.candidates[0].details["questions"] if not q.get("unparsed")]
    assert parsed, "expected at least one question read from real logprobs"


async def test_readout_is_repeatable_at_temperature_zero(local_model):
    task = Task(id="t", prompt="What is the capital of France?", criteria=["The answer is correct"])
    config = _config(local_model)
    ctx = EvaluationContext(task=task, trajectories=(Trajectory(id="a", answer="Paris."),), config=config)
    first = await DecisionJudge().evaluate(ctx)
    second = await DecisionJudge().evaluate(ctx)
    assert first.status == Status.ok, first.error
    p1 = first.candidates[0].details["criteria"][0]["probability"]
    p2 = second.candidates[0].details["criteria"][0]["probability"]
    assert p1 == pytest.approx(p2, abs=1e-6)
    assert 0.0 < first.candidates[0].details["criteria"][0]["covered_mass"] < 1.0


async def test_the_default_coverage_floor_never_turns_crumbs_into_a_verdict(local_model):
    """With the default floor, a question whose label mass is below it is unparsed, and the mass the
    model really put on the labels is recorded; a question above it is read."""
    task = Task(id="t", prompt="What is the capital of France?", criteria=["The answer is correct"])
    config = _config(local_model, coverage_floor=OracleConfig().decision_judge.coverage_floor)
    result = await DecisionJudge().evaluate(
        EvaluationContext(task=task, trajectories=(Trajectory(id="a", answer="Paris."),), config=config))
    details = result.candidates[0].details
    floor = config.decision_judge.coverage_floor
    if "unparsed_questions" in details:  # below the floor: no verdict, the real mass recorded
        (low,) = details["unparsed_questions"].values()
        assert low["covered_mass"] is not None and 0.0 <= low["covered_mass"] < floor, low
        assert "probability mass" in low["reason"]
        assert result.candidates[0].passed is None and result.candidates[0].score is None
        assert result.status == Status.unparsed, result.status
    else:
        assert details["criteria"][0]["covered_mass"] >= floor
        assert result.status == Status.ok
