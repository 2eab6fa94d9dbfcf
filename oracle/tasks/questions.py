"""Fixed-option questions a decision judge answers with a probability per option.

Validation lives here, in the model, so a malformed question is rejected when the task is loaded:
before any model call, with a message that names the field.

Names follow the decision wire formats where they differ from ours: ``noul`` (System One) and
``predicate`` (Decisions) are accepted for the yes/no type and stored as ``likelihood``, so a
question copied from either format's documentation loads as written. The limits are theirs too:
2 to 255 choice options, 2 to 10 score levels.
"""

from __future__ import annotations

import unicodedata
from typing import Any, Literal, Sequence

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

QuestionType = Literal["likelihood", "choice", "score"]
TYPE_ALIASES: dict[str, QuestionType] = {"noul": "likelihood", "predicate": "likelihood"}
"""Wire-format names of our question types, accepted on input."""

MIN_SCORE, MAX_SCORE = 1, 5
MAX_CHOICE_OPTIONS = 255
MAX_SCORE_LEVELS = 10

TaskField = Literal["prompt", "description", "context", "criteria", "reference", "metadata"]
CandidateField = Literal["answer", "code", "steps", "output", "metadata"]


class QuestionInputs(BaseModel):
    """Which fields the decision model sees; only these go into the request."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    task: list[TaskField] = Field(default_factory=lambda: list[TaskField](["prompt"]))
    """Task fields shown to the model (default: the prompt)."""
    candidate: list[CandidateField] = Field(default_factory=lambda: list[CandidateField](["answer"]))
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
    """choice and score: the option (or level) that means 'cannot tell'; it gets no score, and the
    other levels of a score question are spread over 1..5 without it."""
    min_confidence: float | None = Field(default=None, ge=0.0, le=1.0)
    """Below this confidence the answer is flagged for human review (the score is unchanged)."""
    model: str | None = Field(default=None, min_length=1)
    """The native decision endpoint's model for this question (``jev-latest``, say) instead of
    ``providers.decision.model``. Sent only to that endpoint: a logprob readout or sampling on the
    chat endpoint uses the judge's own model and records the override as not applied."""
    inputs: QuestionInputs = Field(default_factory=QuestionInputs)

    @field_validator("type", mode="before")
    @classmethod
    def _wire_type_names(cls, value: Any) -> Any:
        return TYPE_ALIASES.get(value, value) if isinstance(value, str) else value

    @model_validator(mode="after")
    def _check_shape(self) -> "Question":
        if self.type == "choice":
            if not self.options or len(self.options) < 2:
                raise ValueError("options: a choice question needs at least two options")
            if len(self.options) > MAX_CHOICE_OPTIONS:
                raise ValueError(f"options: at most {MAX_CHOICE_OPTIONS} options, got {len(self.options)}")
            _check_distinct("options", list(self.options))
            if self.levels is not None:
                raise ValueError("levels: only score questions have levels")
            if self.abstain_option is not None and self.abstain_option not in self.options:
                raise ValueError(f"abstain_option: {self.abstain_option!r} is not among the options")
        elif self.type == "score":
            if not self.levels or len(self.levels) < 2:
                raise ValueError("levels: a score question needs at least two levels")
            if len(self.levels) > MAX_SCORE_LEVELS:
                raise ValueError(f"levels: at most {MAX_SCORE_LEVELS} levels, got {len(self.levels)}")
            _check_distinct("levels", self.levels)
            if self.options is not None:
                raise ValueError("options: only choice questions have options")
            if self.abstain_option is not None:
                if self.abstain_option not in self.levels:
                    raise ValueError(f"abstain_option: {self.abstain_option!r} is not among the levels")
                if len(self.levels) < 3:
                    raise ValueError("levels: a score question needs at least two levels besides its "
                                     "abstain option")
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
        levels = [name for name in self.levels or [] if name != self.abstain_option]
        step = (MAX_SCORE - MIN_SCORE) / (len(levels) - 1)
        return {name: MIN_SCORE + i * step for i, name in enumerate(levels)}


def is_comparison(question: Question, candidate_ids: Sequence[str]) -> bool:
    """A choice question whose options are exactly the trajectory ids asks which candidate is best."""
    return (question.type == "choice" and len(candidate_ids) >= 2
            and sorted(question.labels()) == sorted(candidate_ids))


def scoring_problem(question: Question, candidate_ids: Sequence[str]) -> tuple[str, str] | None:
    """(field, reason) when a choice question cannot be scored with these candidates, else None.

    Why this needs the candidates: a choice question about each candidate maps its options to
    scores, while one whose options are the candidates' ids compares them and ranks by the
    probability of being best, so option scores would mean nothing there (and are refused).
    """
    if question.type != "choice":
        return None
    if is_comparison(question, candidate_ids):
        if question.scores is not None:
            return "scores", ("a comparison question (its options are the trajectory ids) ranks the "
                              "candidates by the probability of being best and takes no option scores")
        if question.abstain_option is not None:
            return "abstain_option", "a comparison question's options are the candidates; none can mean 'cannot tell'"
        return None
    if question.scores is None:
        return "scores", ("a choice question must map every non-abstaining option to 1..5 (or name "
                          "exactly the trajectory ids as its options, to compare the candidates)")
    return None


def _check_distinct(field: str, labels: list[str]) -> None:
    """Labels must differ as text, not only as code points: two spellings of 'Café' (composed and
    decomposed) look identical to a reader and are merged by servers that normalise names."""
    seen: dict[str, str] = {}
    for label in labels:
        key = unicodedata.normalize("NFC", label)
        if key in seen:
            same = "the same label twice" if seen[key] == label else "the same label in two Unicode forms"
            raise ValueError(f"{field}: {seen[key]!r} and {label!r} are {same}; labels must be distinct")
        seen[key] = label
