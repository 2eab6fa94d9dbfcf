"""LangSmith / openevals evaluator: ``oracle_evaluator()`` returns a callable for ``evaluate``.

    from langsmith import evaluate
    from oracle.integrations.langsmith import oracle_evaluator

    evaluate(target, data="my-dataset", evaluators=[oracle_evaluator()])
    oracle_evaluator()(inputs={...}, outputs={...}, reference_outputs={...})   # openevals style

The callable accepts the openevals convention ``(inputs, outputs, reference_outputs)`` and
LangSmith's ``(run, example)`` (positionally or by name); both read the same fields: inputs =
``example.inputs``, outputs = ``run.outputs``, reference outputs = ``example.outputs``.

Sample mapping (``oracle.integrations.sample``): prompt = inputs (``prompt``/``input``/``question``
key, or the only value, else JSON); the scored candidate = outputs (``output``/``answer``/
``response`` key, or the only value, else JSON); the ``oracle`` spec = ``reference_outputs["oracle"]``;
reference = the rest of reference_outputs (``reference``/``expected``/``answer``/``output`` key, or
the only value); task id = the example id when there is one.

Outcomes: ``{"key", "score", "comment", "metadata"}``; ``ok`` and ``escalated`` give the score
(0..1) with the one-line reason as comment; every other status gives ``score: None`` (LangSmith
shows no score, never a 0) and the comment says why; ``metadata`` always holds route, status,
escalation, passed and error.
"""

from __future__ import annotations

from typing import Any, Mapping

try:
    import langsmith.schemas  # noqa: F401 - the extra's presence is checked here, as for the others
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    raise ImportError("oracle.integrations.langsmith needs langsmith: pip install 'oracle-router[langsmith]'") from exc

from oracle.integrations.sample import (OUTPUT_KEYS, REFERENCE_KEYS, SPEC_KEY, ConfigLike, as_text,
                                        build_task_input, make_oracle, spec_from, verdict)


class OracleLangSmithEvaluator:
    """Callable evaluator (see the module docstring); build it with ``oracle_evaluator``."""

    def __init__(self, oracle: Any, *, key: str, task_defaults: Mapping[str, Any] | None) -> None:
        self.oracle = oracle
        self.key = key
        self.task_defaults = dict(task_defaults or {})
        self.__name__ = key  # LangSmith names feedback sources after the function

    def __call__(self, inputs: Any = None, outputs: Any = None, reference_outputs: Any = None, *,
                 run: Any = None, example: Any = None) -> dict[str, Any]:
        if run is None and _is_run(inputs):  # called positionally as (run, example)
            run, example, inputs, outputs = inputs, outputs, None, None
        task_id = "sample"
        if run is not None:
            outputs = run.outputs if outputs is None else outputs
        if example is not None:
            inputs = example.inputs if inputs is None else inputs
            reference_outputs = example.outputs if reference_outputs is None else reference_outputs
            task_id = str(example.id)
        refs = dict(reference_outputs) if isinstance(reference_outputs, Mapping) else {}
        spec = spec_from(refs)
        refs.pop(SPEC_KEY, None)
        if refs:
            reference: str | None = as_text(refs, REFERENCE_KEYS)
        elif reference_outputs is not None and not isinstance(reference_outputs, Mapping):
            reference = as_text(reference_outputs, REFERENCE_KEYS)
        else:
            reference = None
        item = build_task_input(task_id=task_id, prompt=as_text(inputs), output=as_text(outputs, OUTPUT_KEYS),
                                reference=reference, spec=spec, defaults=self.task_defaults)
        v = verdict(self.oracle.evaluate(item))
        return {"key": self.key, "score": v.score if v.scored else None, "comment": v.reason,
                "metadata": {**v.metadata, "passed": v.passed}}


def _is_run(value: Any) -> bool:
    return not isinstance(value, Mapping) and hasattr(value, "outputs") and hasattr(value, "run_type")


def oracle_evaluator(config: ConfigLike = None, *, key: str = "oracle",
                     task_defaults: Mapping[str, Any] | None = None, oracle: Any = None) -> OracleLangSmithEvaluator:
    """An evaluator callable; ``config`` as for ``Oracle`` (object, file path or None), ``key`` the
    feedback key, ``task_defaults`` task fields for every example (a spec overrides them)."""
    return OracleLangSmithEvaluator(make_oracle(config, oracle), key=key, task_defaults=task_defaults)


__all__ = ["OracleLangSmithEvaluator", "oracle_evaluator"]
