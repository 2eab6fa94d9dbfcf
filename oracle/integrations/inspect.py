"""Inspect AI scorer: ``oracle_scorer()`` routes each sample to the evaluator that fits it.

    from inspect_ai import Task, eval
    from oracle.integrations.inspect import oracle_scorer

    eval(Task(dataset=samples, solver=generate(), scorer=oracle_scorer()), model="...")

Sample mapping (``oracle.integrations.sample``): prompt = ``state.input_text``; the scored
candidate = ``state.output.completion``; reference = ``target.text`` when the sample has a target;
the ``oracle`` spec (criteria, tests, questions, ...) = ``sample.metadata["oracle"]``; task id =
the sample id.

Outcomes: ``ok`` and ``escalated`` give ``Score(value=score 0..1, answer, explanation=one-line
reason, metadata={route, status, escalation, passed, error})``. Every other status is
``Score.unscored(...)`` (NaN, skipped by Inspect's metrics), never a 0: ``failed`` (our side:
model, network, sandbox, no feasible evaluator) with reason ``scoring_failed``, ``unparsed`` and
``abstained`` (the judge could not or would not answer) with ``grader_failed``, and ``pending``
(waiting for a human in the escalation store) with ``pending_human``. Bad spec in a sample raises
``TaskValidationError`` naming the field, which Inspect records as that sample's error.
"""

from __future__ import annotations

from typing import Any, Mapping

try:
    from inspect_ai.scorer import Score, Scorer, Target, mean, scorer, stderr
    from inspect_ai.solver import TaskState
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    raise ImportError("oracle.integrations.inspect needs Inspect AI: pip install 'oracle-router[inspect]'") from exc

from oracle.integrations.sample import ConfigLike, Verdict, build_task_input, make_oracle, spec_from, verdict
from oracle.results.result import Status

UNSCORED_REASONS: dict[Status, str] = {
    Status.failed: "scoring_failed",
    Status.unparsed: "grader_failed",
    Status.abstained: "grader_failed",
    Status.pending: "pending_human",
}
"""Inspect ``Score.reason`` for each status that gives no score."""


@scorer(metrics=[mean(), stderr()], name="oracle_scorer")
def oracle_scorer(config: ConfigLike = None, *, task_defaults: Mapping[str, Any] | None = None,
                  oracle: Any = None) -> Scorer:
    """A scorer that routes and evaluates each sample's output with oracle-router.

    ``config``: an ``OracleConfig``, a config file path, or None (defaults + ORACLE_* variables);
    ``task_defaults``: task fields for every sample (e.g. ``{"criteria": [...]}``), overridden by
    a sample's own ``metadata["oracle"]``; ``oracle``: an ``Oracle`` to use instead (a human or an
    escalation store attached).
    """
    engine = make_oracle(config, oracle)
    defaults = dict(task_defaults or {})

    async def score(state: TaskState, target: Target) -> Score:
        output = state.output.completion if state.output is not None else ""
        item = build_task_input(task_id=str(state.sample_id), prompt=state.input_text, output=output,
                                reference=target.text if target.target else None,
                                spec=spec_from(state.metadata or {}), defaults=defaults)
        return to_score(verdict(await engine.aevaluate(item)), answer=output)

    return score


def to_score(v: Verdict, *, answer: str | None = None) -> Score:
    """An Inspect ``Score`` for a verdict (see the module docstring for the mapping)."""
    metadata = {**v.metadata, "passed": v.passed}
    if v.scored:
        assert v.score is not None
        return Score(value=v.score, answer=answer, explanation=v.reason, metadata=metadata)
    return Score.unscored(reason=UNSCORED_REASONS.get(v.status, v.status.value), answer=answer,
                          explanation=v.reason, metadata=metadata)


__all__ = ["UNSCORED_REASONS", "oracle_scorer", "to_score"]
