"""What a rubric is: the typed content of a draft or a release, and its content hash.

A rubric bundles everything that decides how a task is judged apart from the task itself:
criteria with weights, typed questions, an optional judge prompt template, a pass threshold or a
calibration reference, and ``min_confidence``. The content hash is the sha256 of the canonical
JSON of the validated content, so re-indenting a draft does not change it but any edit that
changes meaning does; evidence names this hash, and a release is only accepted for the exact
draft its evidence was produced with.
"""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from oracle._internal.canonical import sha256_json
from oracle.tasks.questions import Question
from oracle.rubrics.gates import GateResult
from oracle.tasks._judge_template import check_judge_template
from oracle.tasks.task import Criterion, check_criteria_and_questions, criteria_from_strings

NAME_RE = re.compile(r"[a-z0-9][a-z0-9_.-]{0,63}", re.ASCII)
"""Rubric names are plain file names: lowercase, digits, ``_ . -``, at most 64 characters
(matched in full: ``$`` would also match before a trailing newline)."""
VERSION_RE = re.compile(r"[1-9][0-9]{0,8}", re.ASCII)
"""A release number as text: ASCII digits, no sign, no leading zero, at most nine digits (so no
look-alike digit such as ``١`` or ``²``, and no million-digit number, is ever converted)."""
MAX_VERSION = 999_999_999

def check_name(name: str) -> str:
    if not isinstance(name, str) or not NAME_RE.fullmatch(name):
        shown = ascii(name)[:80]
        raise ValueError(f"rubric name {shown}: use 1-64 characters of a-z 0-9 _ . - (starting with a letter or digit)")
    return name


def parse_version(text: str, *, what: str = "version") -> int:
    """A release number from text; ``ValueError`` naming ``what`` for anything but 1-999999999."""
    if not isinstance(text, str) or not VERSION_RE.fullmatch(text):
        shown = ascii(text)[:40] + ("..." if len(ascii(text)) > 40 else "")
        raise ValueError(f"{what} {shown}: a release number is 1 to {MAX_VERSION} in ASCII digits")
    return int(text)


class CalibrationRef(BaseModel):
    """A calibration file the rubric's thresholds come from, pinned by the sha256 of its bytes."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    path: str = Field(min_length=1)
    sha256: str = Field(pattern=r"^[0-9a-f]{64}$")


class RubricContent(BaseModel):
    """The part of a rubric that is hashed, released and applied to tasks."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    description: str = ""
    criteria: list[Criterion] = Field(default_factory=list)
    questions: list[Question] = Field(default_factory=list)
    judge_prompt: str | None = None
    """Pointwise LLM judge user-prompt template (``string.Template``); None keeps the built-in one."""
    pass_threshold: float | None = Field(default=None, ge=0, le=1, allow_inf_nan=False)
    calibration: CalibrationRef | None = None
    min_confidence: float | None = Field(default=None, ge=0, le=1, allow_inf_nan=False)

    @field_validator("criteria", mode="before")
    @classmethod
    def _criteria_from_strings(cls, value: Any) -> Any:
        return criteria_from_strings(value)

    @field_validator("judge_prompt")
    @classmethod
    def _template_checked(cls, value: str | None) -> str | None:
        if value is not None:
            check_judge_template(value)
        return value

    @model_validator(mode="after")
    def _not_empty(self) -> "RubricContent":
        if not self.criteria and not self.questions:
            raise ValueError("a rubric needs at least one criterion or question")
        check_criteria_and_questions(self.criteria, self.questions)
        if self.pass_threshold is not None and self.calibration is not None:
            raise ValueError("give pass_threshold or calibration, not both")
        return self

    def content_hash(self) -> str:
        return sha256_json(self.model_dump(mode="json"))


class Evidence(BaseModel):
    """What a release is justified by: a comparison run or a calibration, summarised."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    kind: Literal["compare", "calibration"]
    path: str
    sha256: str = Field(pattern=r"^[0-9a-f]{64}$")
    """sha256 of the evidence document's bytes (summary.json or the calibration file)."""
    rubric_hash: str = Field(min_length=1, max_length=200)
    metrics: dict[str, Annotated[float, Field(allow_inf_nan=False)] | None]
    answered_items: int | None = Field(default=None, ge=0)
    """Items the evidence has a verdict on, as its own summary counts them (a comparison arm's
    ``answered_items``, a calibration's ``item_outcomes.answered``); None when it records none."""
    gates: list[GateResult] = Field(default_factory=list)
    status: Literal["pass", "fail"] = "pass"


class Release(BaseModel):
    """A frozen rubric version: never edited after it is written."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    schema_version: Literal[1] = 1
    name: str
    version: int = Field(ge=1, le=MAX_VERSION)
    content_hash: str
    content: RubricContent
    released_at: str
    evidence: Evidence
    forced: bool = False
    """True when ``--force`` released it although a gate failed; the failing gates stay recorded."""
    tool_version: str


class RubricRef(BaseModel):
    """What a result's trace says about the rubric it was judged with."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    name: str
    version: int | None = Field(ge=1, le=MAX_VERSION)
    """None for a draft (only allowed where the caller asked for ``NAME@draft``)."""
    content_hash: str
    evidence_status: Literal["pass", "fail", "forced", "draft"]
