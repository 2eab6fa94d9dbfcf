"""Fixed-option questions a decision judge answers with a probability per option.

Validation lives here, in the model, so a malformed question is rejected when the task is loaded:
before any model call, with a message that names the field.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

QuestionType = Literal["likelihood", "choice", "score"]

MIN_SCORE, MAX_SCORE = 1, 5
MAX_CHOICE_OPTIONS = 255
MAX_SCORE_LEVELS = 10

TaskField = Literal["prompt", "description", "criteria", "reference", "metadata"]
CandidateField = Literal["answer", "code", "steps", "output", "metadata"]


class QuestionInputs(BaseModel):
    """Which fields the decision model sees; only these go into the request."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    task: list[TaskField] = Field(default_factory=lambda: ["prompt"])
    """Task fields shown to the model (default: the prompt)."""
    candidate: list[CandidateField] = Field(default_factory=lambda: ["answer"])
    """Candidate fields shown to the model (default: the final answer)."""
    expected: bool = False
    """Whether the task's reference answer is shown as the expected output (default: no)."""


class Question(BaseModel):
    """One typed question: likelihood (yes/no), choice (named options) or score (ordered levels)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    id: str = Field(min_length=1)
    type: QuestionType
    instructions: str = Field(min_length=1)
    """What the model is asked, in plain words."""
    options: dict[str, str] | None = None
    """choice only: label -> description, 2 to 255 of them, in the order asked."""
    levels: list[str] | None = None
    """score only: 2 to 10 ordered level names, lowest first."""
    scores: dict[str, int] | None = None
    """Option/level -> score in 1..5. likelihood default yes 5 / no 1; score levels spread evenly."""
    abstain_option: str | None = None
    """choice only: the option that means 'cannot tell'; it gets no score."""
    min_confidence: float | None = Field(default=None, ge=0.0, le=1.0)
    """Below this confidence the answer is flagged for human review (the score is unchanged)."""
    inputs: QuestionInputs = Field(default_factory=QuestionInputs)

    @model_validator(mode="after")
    def _check_shape(self) -> "Question":
        if self.type == "choice":
            if not self.options or len(self.options) < 2:
                raise ValueError("options: a choice question needs at least two options")
            if len(self.options) > MAX_CHOICE_OPTIONS:
                raise ValueError(f"options: at most {MAX_CHOICE_OPTIONS} options")
            if self.levels is not None:
                raise ValueError("levels: only score questions have levels")
            if self.abstain_option is not None and self.abstain_option not in self.options:
                raise ValueError(f"abstain_option: {self.abstain_option!r} is not among the options")
        elif self.type == "score":
            if not self.levels or len(self.levels) < 2:
                raise ValueError("levels: a score question needs at least two levels")
            if len(self.levels) > MAX_SCORE_LEVELS:
                raise ValueError(f"levels: at most {MAX_SCORE_LEVELS} levels")
            if len(set(self.levels)) != len(self.levels):
                raise ValueError("levels: level names must be unique")
            if self.options is not None:
                raise ValueError("options: only choice questions have options")
            if self.abstain_option is not None:
                raise ValueError("abstain_option: only choice questions may abstain")
        else:
            if self.options is not None or self.levels is not None:
                raise ValueError("options: a likelihood question is yes/no and takes no options or levels")
            if self.abstain_option is not None:
                raise ValueError("abstain_option: a likelihood question has no abstention")
        if self.scores is not None:
            labels = self.labels()
            for name, value in self.scores.items():
                if name not in labels:
                    raise ValueError(f"scores: {name!r} is not among the options {labels}")
                if not MIN_SCORE <= value <= MAX_SCORE:
                    raise ValueError(f"scores: {name!r} -> {value} is outside {MIN_SCORE}..{MAX_SCORE}")
            if self.abstain_option is not None and self.abstain_option in self.scores:
                raise ValueError("scores: the abstain option must not have a score")
            missing = [label for label in labels
                       if label != self.abstain_option and label not in self.scores]
            if missing:
                raise ValueError(f"scores: missing a score for {missing}")
        elif self.type == "choice":
            raise ValueError("scores: a choice question must map every non-abstaining option to 1..5")
        return self

    def labels(self) -> list[str]:
        """The answer labels in the order they are asked."""
        if self.type == "likelihood":
            return ["yes", "no"]
        if self.type == "choice":
            return list(self.options or {})
        return list(self.levels or [])

    def score_map(self) -> dict[str, float]:
        """Label -> score on 1..5 (abstain option excluded)."""
        if self.scores is not None:
            return {k: float(v) for k, v in self.scores.items()}
        if self.type == "likelihood":
            return {"yes": 5.0, "no": 1.0}
        levels = self.levels or []
        step = (MAX_SCORE - MIN_SCORE) / (len(levels) - 1)
        return {name: MIN_SCORE + i * step for i, name in enumerate(levels)}
