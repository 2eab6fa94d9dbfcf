"""DeepEval metric: ``OracleMetric`` routes each test case to the evaluator that fits it.

    from deepeval import evaluate
    from deepeval.test_case import LLMTestCase
    from oracle.integrations.deepeval import OracleMetric

    evaluate([LLMTestCase(input=..., actual_output=..., expected_output=...)], metrics=[OracleMetric()])

Why DeepEval rather than promptfoo: DeepEval is a Python package, so it is an ordinary extra of
this package (``pip install 'oracle-router[deepeval]'``), resolved and checked by pip with the
others, and the metric runs in-process with typed objects on both sides. promptfoo is a Node CLI:
it would need npm and native modules beside pip, and would reach the oracle through a script it
spawns per assertion, with every value passing as JSON text.

Test-case mapping (``oracle.integrations.sample``): prompt = ``input``; the scored candidate =
``actual_output``; reference = ``expected_output`` when set; the ``oracle`` spec =
``metadata["oracle"]`` (DeepEval also accepts the older name ``additional_metadata``); task id =
the test case's ``name``.

Outcomes: ``ok`` and ``escalated`` set ``score`` (0..1), ``reason`` (the one-line verdict) and
``success`` (the evaluator's pass/fail where it has one, else ``score >= threshold``). Every other
status (``failed``, ``unparsed``, ``abstained``, ``pending``) raises ``OracleUnscored`` naming the
status and the reason: DeepEval reports it as that metric's ``error`` (score None, not a success)
when run with ``ErrorConfig(ignore_errors=True)``, and stops the run otherwise, never a 0.
Telemetry: DeepEval's own telemetry is its business; set ``DEEPEVAL_TELEMETRY_OPT_OUT=1`` to turn
it off (the tests do, with the network unreachable).
"""

from __future__ import annotations

from typing import Any, Mapping

try:
    from deepeval.metrics import BaseMetric
    from deepeval.test_case import LLMTestCase
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    raise ImportError("oracle.integrations.deepeval needs DeepEval: pip install 'oracle-router[deepeval]'") from exc

from oracle.errors import OracleError
from oracle.integrations.sample import (ConfigLike, Verdict, build_task_input, make_oracle, spec_from,
                                        verdict)
from oracle.tasks.task import TaskInput


class OracleUnscored(OracleError):
    """The oracle gave no score for this test case (its status says why: failed, unparsed, ...)."""

    def __init__(self, v: Verdict) -> None:
        super().__init__(f"{v.status.value}: {v.reason}")
        self.verdict = v


class OracleMetric(BaseMetric):  # type: ignore[misc]
    """A DeepEval metric backed by oracle-router (see the module docstring for the mapping)."""

    def __init__(self, config: ConfigLike = None, *, threshold: float = 0.5,
                 task_defaults: Mapping[str, Any] | None = None, oracle: Any = None,
                 async_mode: bool = True) -> None:
        self.threshold = threshold
        self.async_mode = async_mode
        self.include_reason = True
        self.evaluation_model = "oracle-router"
        self.task_defaults = dict(task_defaults or {})
        self._oracle = make_oracle(config, oracle)
        self.verdict: Verdict | None = None

    @property
    def __name__(self) -> str:  # type: ignore[override]
        return "Oracle"

    def _item(self, test_case: LLMTestCase) -> TaskInput:
        metadata = getattr(test_case, "metadata", None) or getattr(test_case, "additional_metadata", None) or {}
        return build_task_input(task_id=getattr(test_case, "name", None) or "test_case", prompt=test_case.input,
                                output=test_case.actual_output or "", reference=test_case.expected_output,
                                spec=spec_from(metadata), defaults=self.task_defaults)

    def _apply(self, v: Verdict) -> float:
        self.verdict = v
        self.reason = v.reason
        if not v.scored:
            self.score, self.success = None, False
            raise OracleUnscored(v)
        assert v.score is not None
        self.score = v.score
        self.success = v.passed if v.passed is not None else v.score >= (self.threshold or 0.0)
        return v.score

    def measure(self, test_case: LLMTestCase, *args: Any, **kwargs: Any) -> float:
        return self._apply(verdict(self._oracle.evaluate(self._item(test_case))))

    async def a_measure(self, test_case: LLMTestCase, *args: Any, **kwargs: Any) -> float:
        return self._apply(verdict(await self._oracle.aevaluate(self._item(test_case))))

    def is_successful(self) -> bool:
        if self.error is not None or self.score is None:
            self.success = False
        return bool(self.success)


__all__ = ["OracleMetric", "OracleUnscored"]
