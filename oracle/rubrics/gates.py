"""Release gates: thresholds on the evidence's metrics, set in config, checked at release.

A gate whose metric is missing from the evidence fails (a gate cannot be passed by omission)."""

from __future__ import annotations

import math
import operator
from typing import Callable, Literal, Mapping

from pydantic import BaseModel, ConfigDict, Field


_OPS: dict[str, Callable[[float, float], bool]] = {
    ">=": operator.ge, ">": operator.gt, "<=": operator.le, "<": operator.lt}


class Gate(BaseModel):
    """``metric op value``, for example ``agreement >= 0.8`` or ``ece <= 0.1`` or ``n >= 100``."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    metric: str = Field(min_length=1)
    op: Literal[">=", ">", "<=", "<"]
    value: float = Field(allow_inf_nan=False)


class GateResult(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    metric: str
    op: str
    required: float
    actual: float | None
    passed: bool


def evaluate_gates(gates: list[Gate], metrics: Mapping[str, float | None]) -> list[GateResult]:
    out = []
    for gate in gates:
        actual = metrics.get(gate.metric)
        ok = actual is not None and not math.isnan(actual) and _OPS[gate.op](actual, gate.value)
        out.append(GateResult(metric=gate.metric, op=gate.op, required=gate.value, actual=actual, passed=ok))
    return out
