"""One mapping from an evaluation framework's sample to an oracle task, and back to a verdict.

Frameworks score one model output per sample; oracle-router judges a task with candidates. The
mapping, the same for every adapter:

- prompt: the sample's input (text as is; a mapping's ``prompt``, ``input`` or ``question`` key, or
  its only value; anything else as canonical JSON);
- candidate: the output being scored becomes trajectory ``output`` (its answer; code inside is
  what the verifier runs);
- reference: the sample's expected output or target, when it has one;
- everything else comes from an ``oracle`` spec: a mapping of ``Task`` fields (``criteria``,
  ``tests``, ``questions``, ``reference_check``, ``entry_point``, ``language``, ``evaluator``, ...)
  plus ``candidates`` (other trajectories judged alongside the output, e.g. a baseline). Each
  adapter names where its sample keeps the spec (metadata, reference outputs); the adapter's
  ``task_defaults`` apply to every sample and a sample's spec overrides them key by key (a spec
  that names ``prompt`` or ``reference`` itself wins over the sample's field).

The verdict read back is ``oracle.results.verdict`` (telemetry reports the same one); ``verdict``
here reads it for the scored output.

Bad specs raise ``TaskValidationError`` naming the field before anything runs: a sample that
cannot be turned into a task is an error in the framework's own terms, never a score.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any, Mapping, Union

from oracle.results.result import OracleResult
from oracle.results.verdict import SCORED, CriterionScore, Verdict, criterion_scores
from oracle.results.verdict import verdict as candidate_verdict
from oracle.tasks.task import TaskInput

if TYPE_CHECKING:
    from oracle.config.model import OracleConfig
    from oracle._oracle import Oracle

SPEC_KEY = "oracle"
"""Where a sample keeps its oracle spec (a metadata key, or a key of the reference outputs)."""
OUTPUT_ID = "output"
"""Trajectory id of the output being scored."""
PROMPT_KEYS = ("prompt", "input", "question")
OUTPUT_KEYS = ("output", "answer", "response")
REFERENCE_KEYS = ("reference", "expected", "answer", "output")


ConfigLike = Union["OracleConfig", str, Path, None]
"""What an adapter's ``config`` argument takes: a config object, a config file path, or None
(``OracleConfig.load()``: defaults plus ORACLE_* environment overrides)."""


def make_oracle(config: ConfigLike = None, oracle: "Oracle | None" = None) -> "Oracle":
    """The Oracle an adapter uses: the one given, else one built from ``config``."""
    from oracle.config.model import OracleConfig
    from oracle._oracle import Oracle

    if oracle is not None:
        return oracle
    if isinstance(config, OracleConfig):
        return Oracle(config)
    return Oracle(OracleConfig.load(config))


def as_text(value: Any, keys: tuple[str, ...] = PROMPT_KEYS) -> str:
    """A sample field as text: a string as is, a mapping's first known key or only value, else JSON."""
    if isinstance(value, str):
        return value
    if isinstance(value, Mapping):
        for key in keys:
            if isinstance(value.get(key), str):
                return str(value[key])
        if len(value) == 1:
            return as_text(next(iter(value.values())), keys)
    if value is None:
        return ""
    return json.dumps(value, sort_keys=True, default=str, ensure_ascii=False)


def spec_from(container: Any) -> dict[str, Any]:
    """The ``oracle`` spec held by a metadata mapping (or an object with an ``oracle`` attribute)."""
    if isinstance(container, Mapping):
        spec = container.get(SPEC_KEY)
    else:
        spec = getattr(container, SPEC_KEY, None)
    if spec is None:
        return {}
    if not isinstance(spec, Mapping):
        from oracle.errors import TaskValidationError

        raise TaskValidationError(f"{SPEC_KEY}: expected a mapping of task fields, got {type(spec).__name__}",
                                  field=SPEC_KEY)
    return dict(spec)


def build_task_input(*, task_id: str, prompt: str, output: str, reference: str | None = None,
                     spec: Mapping[str, Any] | None = None,
                     defaults: Mapping[str, Any] | None = None) -> TaskInput:
    """The task for one sample (see the module docstring); raises ``TaskValidationError``."""
    merged = {**(defaults or {}), **(spec or {})}
    extra = merged.pop("candidates", None) or []
    task: dict[str, Any] = {"id": task_id or "sample", "prompt": prompt}
    if reference is not None and reference != "":
        task["reference"] = reference
    task.update(merged)
    if not isinstance(extra, list):
        from oracle.errors import TaskValidationError

        raise TaskValidationError(f"{SPEC_KEY}.candidates: expected a list of trajectories", field="candidates")
    return TaskInput.model_validate({"task": task, "trajectories": [{"id": OUTPUT_ID, "answer": output}, *extra]})


def verdict(result: OracleResult, candidate_id: str = OUTPUT_ID) -> Verdict:
    """The verdict on the scored output (the trajectory ``OUTPUT_ID``), or on ``candidate_id``."""
    return candidate_verdict(result, candidate_id)


__all__ = ["OUTPUT_ID", "ConfigLike", "CriterionScore", "criterion_scores", "make_oracle", "SCORED", "SPEC_KEY",
           "Verdict", "as_text", "build_task_input", "spec_from", "verdict"]
