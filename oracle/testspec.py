"""The runnable test kinds a task may carry, and how a non-code answer is checked against a reference.

Kinds: ``assert`` (code that must run without error), ``call`` (an expression whose value must
equal ``expected``), ``io`` (stdin in, stdout compared) and ``check`` (code defining
``check(candidate)``, HumanEval style). An unknown kind is rejected at load time.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal, Union

from pydantic import BaseModel, ConfigDict, Field


class _TestBase(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str | None = None
    """A short label shown in per-test outcomes (default: kind and index)."""
    timeout_s: float | None = Field(default=None, gt=0, le=600)
    """Wall-clock limit for this test; None takes the verifier's default."""
    weight: float = Field(default=1.0, ge=0, le=1e9, allow_inf_nan=False)
    """Share of the candidate's score this test carries (relative to the others). Finite and at
    most 1e9, so a sum of weights never overflows (1e308 weights used to score a pass as 0.0)."""


class AssertTest(_TestBase):
    """Code that runs after the candidate; it passes when it raises nothing."""

    kind: Literal["assert"]
    code: str = Field(min_length=1)


class CallTest(_TestBase):
    """``call`` is an expression (e.g. ``add(1, 2)``); its value must equal ``expected``."""

    kind: Literal["call"]
    call: str = Field(min_length=1)
    expected: Any
    tolerance: float | None = Field(default=None, ge=0, allow_inf_nan=False)
    """Absolute tolerance for floats; None takes the verifier's default."""


class IoTest(_TestBase):
    """The program reads ``stdin`` and must print ``stdout``."""

    kind: Literal["io"]
    stdin: str = ""
    stdout: str
    whitespace: Literal["exact", "rstrip_lines", "collapse"] = "rstrip_lines"
    """exact: byte for byte; rstrip_lines: trailing spaces per line and trailing newlines ignored;
    collapse: every run of whitespace counts as one space and the ends are stripped."""


class CheckTest(_TestBase):
    """Code defining ``check(candidate)``; it is called with the entry point."""

    kind: Literal["check"]
    code: str = Field(min_length=1)


TestCase = Annotated[Union[AssertTest, CallTest, IoTest, CheckTest], Field(discriminator="kind")]

ReferenceMode = Literal["exact", "normalized", "numeric", "regex", "set"]


class ReferenceCheck(BaseModel):
    """How an answer that is not code is compared with ``task.reference``.

    exact: equal strings; normalized: case, punctuation and whitespace ignored; numeric: the first
    number in the answer within ``rel_tol``/``abs_tol`` of the reference; regex: the reference is a
    pattern that must match the whole (stripped) answer; set: both split on ``separator`` and
    compared as normalized sets, order ignored.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    mode: ReferenceMode = "normalized"
    rel_tol: float = Field(default=1e-6, ge=0, allow_inf_nan=False)
    abs_tol: float = Field(default=1e-9, ge=0, allow_inf_nan=False)
    separator: str = Field(default=",", min_length=1)
