"""pydantic-evals Evaluator: ``OracleEvaluator`` routes each case to the evaluator that fits it.

    from pydantic_evals import Case, Dataset
    from oracle.integrations.pydantic_evals import OracleEvaluator

    Dataset(cases=[...], evaluators=[OracleEvaluator()]).evaluate_sync(my_function)

Case mapping (``oracle.integrations.sample``): prompt = the case's ``inputs`` (a string, or a
mapping's ``prompt``/``input``/``question`` key, else JSON); the scored candidate = the task
function's output (text, else JSON); reference = ``expected_output`` when set; the ``oracle`` spec
= ``metadata["oracle"]`` (a mapping key, or an ``oracle`` attribute of a metadata object); task id
= the case name.

Outcomes, as named results whose reason is the one-line verdict: ``ok`` and ``escalated`` give
``oracle_score`` (0..1), ``oracle_passed`` (bool, when the evaluator decides pass/fail) and
``oracle_status``; ``abstained``, ``unparsed`` and ``pending`` give ``oracle_status`` only (no
score, never a 0); ``failed`` (model, network, sandbox, no feasible evaluator) raises
``OracleEvaluationFailed``, which pydantic-evals records as an ``EvaluatorFailure``, apart from
the scores.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

try:
    from pydantic_evals.evaluators import EvaluationReason, Evaluator, EvaluatorContext
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    raise ImportError("oracle.integrations.pydantic_evals needs pydantic-evals: "
                      "pip install 'oracle-router[pydantic-evals]'") from exc

from oracle.errors import OracleError
from oracle.integrations.sample import (OUTPUT_KEYS, REFERENCE_KEYS, as_text, build_task_input, make_oracle,
                                        spec_from, verdict)
from oracle.results.result import Status


class OracleEvaluationFailed(OracleError):
    """The oracle could not evaluate the case (its own failure, not the output's)."""


@dataclass(repr=False)
class OracleEvaluator(Evaluator[Any, Any, Any]):
    """Evaluate each case's output with oracle-router.

    ``config``: an ``OracleConfig``, a config file path, or None (defaults + ORACLE_* variables);
    ``task_defaults``: task fields for every case, overridden by a case's ``metadata["oracle"]``.
    """

    config: Any = None
    task_defaults: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self._oracle = make_oracle(self.config)

    def build_serialization_arguments(self) -> dict[str, Any]:
        """A config object is named by its hash in reports and specs, not dumped whole (a path or
        None is kept as given)."""
        arguments = super().build_serialization_arguments()
        if "config" in arguments and not isinstance(arguments["config"], (str, type(None))):
            arguments["config"] = f"sha256:{self._oracle.config.hash()}"
        return arguments

    async def evaluate(self, ctx: EvaluatorContext[Any, Any, Any]) -> dict[str, EvaluationReason]:
        reference = None if ctx.expected_output is None else as_text(ctx.expected_output, REFERENCE_KEYS)
        item = build_task_input(task_id=ctx.name or "case", prompt=as_text(ctx.inputs),
                                output=as_text(ctx.output, OUTPUT_KEYS), reference=reference,
                                spec=spec_from(ctx.metadata), defaults=self.task_defaults)
        v = verdict(await self._oracle.aevaluate(item))
        if v.status is Status.failed:
            raise OracleEvaluationFailed(v.reason)
        results = {"oracle_status": EvaluationReason(value=v.status.value, reason=v.reason)}
        if v.scored:
            assert v.score is not None
            results["oracle_score"] = EvaluationReason(value=v.score, reason=v.reason)
            if v.passed is not None:
                results["oracle_passed"] = EvaluationReason(value=v.passed, reason=v.reason)
        return results


__all__ = ["OracleEvaluationFailed", "OracleEvaluator"]
