"""The numbers that decide a route: each policy's weight, thresholds and vote spreads, typed.

Every number a policy or a signal uses to pick an evaluator lives here, with its default and what
it means, and reaches the policies only through ``OracleConfig.routing``; so every one of them is
in the config hash, and changing one changes the hash of every trace it affects. The policy code
(``policies/``) holds only the logic; its ``version`` says when that logic changed.

This module imports only pydantic: config, signals and policies all build on it.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

_FROZEN = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)

CUE_PREFIX_CHARS = 2048
"""Default of ``routing.cue_prefix_chars``: cue words are counted in this many leading prompt chars."""
SCAN_CHARS = 2048
"""Default of ``routing.scan_chars``: every other text a signal reads is read this far and no further."""


class Spread(BaseModel):
    """A policy's raw preference for each evaluator; the vote is this, normalized to sum to 1."""

    model_config = _FROZEN
    verifier: float = Field(default=0.0, ge=0)
    decision_judge: float = Field(default=0.0, ge=0)
    llm_judge: float = Field(default=0.0, ge=0)

    @model_validator(mode="after")
    def _positive(self) -> "Spread":
        if self.verifier + self.decision_judge + self.llm_judge <= 0:
            raise ValueError("a spread needs some positive preference")
        return self

    def shares(self) -> dict[str, float]:
        """The normalized spread (sums to 1), keys in the fixed evaluator order."""
        total = self.verifier + self.decision_judge + self.llm_judge
        return {"decision_judge": self.decision_judge / total, "llm_judge": self.llm_judge / total,
                "verifier": self.verifier / total}


def _spread(verifier: float, decision_judge: float, llm_judge: float) -> Any:
    return Field(default_factory=lambda: Spread(verifier=verifier, decision_judge=decision_judge,
                                                llm_judge=llm_judge))


class PolicySettings(BaseModel):
    """Weight of one routing policy in the chain; weight 0 or enabled=false removes it.

    Each built-in policy has a subclass below that adds the numbers its votes use.
    """

    model_config = _FROZEN
    weight: float = Field(default=1.0, ge=0)
    enabled: bool = True


class ExecutionEvidenceSettings(PolicySettings):
    """``execution_evidence``: a repository's tests, runnable tests or execution output favour the verifier."""

    weight: float = Field(default=3.0, ge=0)
    repository_tests: Spread = _spread(0.9, 0.05, 0.05)
    """A repository and its own tests (``has_repository``): the verifier applies each candidate's
    patch and runs them. The same spread as ``runnable_tests``, chosen by that analogy, not fitted."""
    runnable_tests: Spread = _spread(0.9, 0.05, 0.05)
    """Tests in a language the verifier runs."""
    unrunnable_tests: Spread = _spread(0.5, 0.1, 0.4)
    """Tests in a language the verifier cannot run here."""
    execution_output: Spread = _spread(0.6, 0.1, 0.3)
    """No tests, but candidates report execution output."""
    untested_code: Spread = _spread(0.2, 0.1, 0.7)
    """Candidate code and nothing to run it against."""


class ReferenceAnswerSettings(PolicySettings):
    """``reference_answer``: a short reference is an answer key, a long one guides a judge."""

    short_reference_chars: int = Field(default=200, ge=0)
    """A reference of at most this many characters (and no candidate code) is an answer key."""
    short_reference: Spread = _spread(0.6, 0.3, 0.1)
    long_reference: Spread = _spread(0.2, 0.2, 0.6)


class ClosedQuestionSettings(PolicySettings):
    """``closed_question``: fixed-option questions and yes/no criteria favour the decision judge."""

    weight: float = Field(default=2.5, ge=0)
    questions: Spread = _spread(0.05, 0.9, 0.05)
    """The task asks explicit fixed-option questions."""
    all_yes_no: Spread = _spread(0.0, 0.75, 0.25)
    """Every criterion reads as a yes/no check."""
    mostly_yes_no_share: float = Field(default=0.5, ge=0, le=1)
    """At least this share of criteria read as yes/no checks (but not all): ``mostly_yes_no``."""
    mostly_yes_no: Spread = _spread(0.0, 0.55, 0.45)
    open_criteria: Spread = _spread(0.0, 0.3, 0.7)
    """Fewer yes/no criteria than ``mostly_yes_no_share``: a rubric to judge."""


class OpenEndedJudgmentSettings(PolicySettings):
    """``open_ended_judgment``: a graded scale, a rationale or judgment vocabulary -> LLM judge."""

    weight: float = Field(default=1.5, ge=0)
    asked: Spread = _spread(0.05, 0.1, 0.85)
    """The prompt or criteria ask for a graded scale or a written rationale."""
    vocabulary_density: float = Field(default=0.02, ge=0, le=1)
    """Judgment cue density at or above this votes ``vocabulary``."""
    vocabulary: Spread = _spread(0.1, 0.2, 0.7)


class PairwisePreferenceSettings(PolicySettings):
    """``pairwise_preference``: several free-text candidates and nothing to check them against."""

    min_candidates: int = Field(default=2, ge=2)
    preference: Spread = _spread(0.05, 0.15, 0.8)


class CueBalanceSettings(PolicySettings):
    """``cue_balance``: checkable versus judgment vocabulary, in proportion.

    With ``share`` = verifiable / (verifiable + judgment) cue density, the raw spread is
    verifier ``base + swing * share``, llm_judge ``base + swing * (1 - share)``, decision judge
    ``decision_judge``.
    """

    min_density: float = Field(default=0.005, ge=0, le=2)
    """Abstain when both densities together are below this."""
    base: float = Field(default=0.2, ge=0)
    swing: float = Field(default=0.6, ge=0)
    decision_judge: float = Field(default=0.2, ge=0)

    @model_validator(mode="after")
    def _votes_something(self) -> "CueBalanceSettings":
        if 2 * self.base + self.swing + self.decision_judge <= 0:
            raise ValueError("base, swing and decision_judge cannot all be 0")
        return self


class DifficultySettings(PolicySettings):
    """``difficulty``: prior hardness from history and stated difficulty.

    A hard task gets the strongest verification that can run on it: the verifier when it has tests
    or a reference, else the decision judge when it asks closed questions, criteria or a claim
    check, else the LLM judge; the route then says ``hard`` so the evaluator spends its repeats
    (more samples, both orders) instead of taking a cheaper path.
    """

    weight: float = Field(default=2.0, ge=0)
    hard_history: float = Field(default=0.5, ge=0, le=1)
    """Prior hardness (share of earlier evaluations that failed or escalated) at or above this is hard."""
    stated_hard: bool = True
    """A task's own ``difficulty: hard`` counts as hard too (false: only history makes a task hard)."""
    checkable_reference_chars: int = Field(default=200, ge=0)
    """A reference at most this long is an answer key the verifier checks (a longer one guides a judge)."""
    hard_checkable: Spread = _spread(0.9, 0.05, 0.05)
    """Hard, with tests or an answer-key reference: run the checks."""
    hard_closed: Spread = _spread(0.05, 0.85, 0.1)
    """Hard, with closed questions, criteria or a claim check and nothing to run: the decision judge."""
    hard: Spread = _spread(0.05, 0.15, 0.8)
    """Hard open-ended work: the LLM judge (with its repeats)."""
    easy: Spread = _spread(0.4, 0.4, 0.2)


class ToolUseSettings(PolicySettings):
    """``tool_use``: agent trajectories. Expected tool calls, tool results or a final-state check
    favour the verifier (it checks the steps); tool steps with nothing to check them against favour
    a judge that reads the steps."""

    weight: float = Field(default=2.5, ge=0)
    expected_calls: Spread = _spread(0.9, 0.05, 0.05)
    """The task carries ``tool_calls``, ``tool_result`` or ``final_state`` tests."""
    unchecked_steps: Spread = _spread(0.05, 0.15, 0.8)
    """Candidates made tool calls and the task says nothing about what they should have been."""


class ClaimCheckSettings(PolicySettings):
    """``claim_check``: one candidate's answer checked as a claim against text evidence (the task's
    ``reference`` or ``context``), asked for with ``claim_check: true`` or in the prompt ("is this
    claim supported ...?"): the decision judge's confirmation-versus-challenge questions."""

    weight: float = Field(default=3.0, ge=0)
    claim: Spread = _spread(0.05, 0.9, 0.05)


POLICY_SETTINGS: dict[str, type[PolicySettings]] = {
    "execution_evidence": ExecutionEvidenceSettings,
    "closed_question": ClosedQuestionSettings,
    "reference_answer": ReferenceAnswerSettings,
    "open_ended_judgment": OpenEndedJudgmentSettings,
    "pairwise_preference": PairwisePreferenceSettings,
    "cue_balance": CueBalanceSettings,
    "difficulty": DifficultySettings,
    "tool_use": ToolUseSettings,
    "claim_check": ClaimCheckSettings,
}
"""Built-in policy name -> its settings model (defaults included)."""


def settings_type(name: str) -> type[PolicySettings]:
    """The settings model of a policy; plain ``PolicySettings`` for one registered elsewhere."""
    return POLICY_SETTINGS.get(name, PolicySettings)


def merge_policy_settings(value: Any) -> Any:
    """``routing.policies`` as given -> every built-in policy with its typed settings.

    A policy named in the config takes its given fields over its own defaults; a built-in policy
    not named keeps all its defaults (so ``difficulty: {weight: 0}`` turns off one policy, not all
    of them). Anything that is not a mapping is left for pydantic to reject.
    """
    if not isinstance(value, dict):
        return value
    out: dict[str, Any] = {name: cls() for name, cls in POLICY_SETTINGS.items()}
    for name, given in value.items():
        cls = settings_type(name)
        if isinstance(given, cls):
            out[name] = given
            continue
        if isinstance(given, BaseModel):
            given = given.model_dump(exclude_unset=True)
        if not isinstance(given, dict):
            out[name] = given  # pydantic names the type error
            continue
        try:
            out[name] = cls.model_validate(given)
        except ValidationError as exc:
            # Re-raised as a plain message so the config error still names the field.
            raise ValueError("; ".join(
                f"{'.'.join(str(p) for p in (name, *e['loc']))}: "
                f"{'unknown key' if e['type'] == 'extra_forbidden' else e['msg']}"
                for e in exc.errors())) from None
    return out
