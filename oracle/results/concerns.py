"""Concerns: what an evaluator noticed that might need a human, as typed values.

Why typed: escalation (oracle/escalation/_triggers.py) used to read each evaluator's free-form ``details`` by
string key, so renaming a key in a judge silenced an escalation with every test still green. Now an
evaluator states each concern once, as one of the models below, and escalation matches on the
class. Every concern has a ``kind``, the ``candidates`` involved, a one-line ``message`` and an
``evidence`` model whose fields are the facts a request quotes.

Which evaluator emits what:

- decision judge: ``decision_refusal``, ``decision_abstention``, ``decision_low_confidence``
  (exact ties included), ``decision_order_flip``, ``claim_undecided`` (a claim check whose two
  questions disagree or are weak), ``no_candidate_passed`` (each candidate's first unmet criterion),
  ``unparsed``;
- LLM judge: ``order_inconsistent``, ``preference_cycle``, ``unparsed``, ``tied_best``;
- both judges: ``candidate_unjudged`` (a call failed on one candidate's input: that candidate, or
  pair, was left out and the others were judged), ``panel_disagreement`` (the members of a judge
  panel split: on a criterion or a pair, or on a question's answer);
- verifier: ``sandbox_failure`` (also when it hit only some candidates' runs: those are left
  unscored), ``task_unrunnable``, ``weak_isolation`` (below the strongest level, or ``in_process``
  integrity), ``no_candidate_passed`` (each candidate's first failure), ``tampering`` (a
  candidate's run changed the sandbox worker it ran in, or a repository candidate changed a
  protected file: a test, a conftest.py, test configuration, a site hook, .git), ``broken_tests`` (tests that are the
  task's fault, scored for no candidate).

``unparsed``, ``tied_best`` and ``candidate_unjudged`` are recorded for readers; escalation asks
about a tie through the scores (``inseparable_candidates``), not through ``tied_best``.
"""

from __future__ import annotations

from typing import Annotated, Literal, Union

from pydantic import BaseModel, ConfigDict, Field

from oracle.results.provenance import Integrity


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class _Concern(_Model):
    candidates: list[str] = Field(default_factory=list)
    """Ids of the candidates the concern is about, in the order that matters for the question."""
    message: str
    """One line a person can read without the rest of the result."""


# -- evidence ------------------------------------------------------------------------------------

class QuestionsEvidence(_Model):
    questions: dict[str, list[str]] = Field(default_factory=dict)
    """Per candidate, the question ids concerned."""


class RefusalEvidence(QuestionsEvidence):
    reasons: list[str] = Field(default_factory=list)
    """What the model said when it refused, where it said anything."""


class LowConfidenceEvidence(QuestionsEvidence):
    confidence: dict[str, float | None] = Field(default_factory=dict)
    """Per candidate, the confidence of its first unsure question (None when not per question)."""


class OrderFlipEvidence(_Model):
    winners_by_order: list[str | None] = Field(default_factory=list)
    probabilities: dict[str, float] | None = None


class PairsEvidence(_Model):
    pairs: list[tuple[str, str]] = Field(default_factory=list)
    basis: str | None = None
    """What the pairs were judged on (a criterion), when narrower than the whole rubric."""


class CyclesEvidence(_Model):
    cycles: list[list[str]] = Field(default_factory=list)


class UnparsedEvidence(_Model):
    pairs: list[tuple[str, str]] = Field(default_factory=list)


class ScoresEvidence(_Model):
    scores: dict[str, float | None] = Field(default_factory=dict)


class ErrorEvidence(_Model):
    type: str
    message: str


class UnjudgedEvidence(_Model):
    errors: dict[str, ErrorEvidence] = Field(default_factory=dict)
    """Per candidate left out: the error of its failed call."""
    pairs: list[tuple[str, str]] = Field(default_factory=list)
    """Pairs whose comparison call failed (the candidates' other pairs still counted)."""


class PanelEvidence(_Model):
    members: list[str] = Field(default_factory=list)
    """The panel's member labels."""
    threshold: float
    """The configured spread (normalized score) above which members count as split."""
    spreads: dict[str, dict[str, float]] = Field(default_factory=dict)
    """Per candidate, per criterion the members split on: max - min of their normalized scores."""
    pairs: list[tuple[str, str]] = Field(default_factory=list)
    """Pairs whose members named different winners (a tie counts as a pick of its own)."""
    winners: dict[str, dict[str, str | None]] = Field(default_factory=dict)
    """Per split pair ("a/b"), each member's winner (None: a tie)."""


class IsolationEvidence(_Model):
    integrity: Integrity
    isolation_level: str | None = None


class ProtectedFileChange(_Model):
    """One protected file of a repository task that a candidate changed (docs/repository.md)."""

    path: str
    """Relative to the repository root."""
    category: Literal["test_file", "conftest", "test_config", "site_hook", "git"]
    change: Literal["added", "modified", "deleted"]
    when: Literal["patch", "run"] = "patch"
    """``patch``: its patch changed the file (found before anything ran); ``run``: the file changed
    while its tests ran (found by the check after the run)."""
    action: Literal["restored", "failed"]
    """``restored``: put back to the base plus the test patch and the candidate judged on the rest;
    ``failed``: the change failed the candidate."""


class TamperingEvidence(_Model):
    changes: dict[str, list[str]] = Field(default_factory=dict)
    """Per candidate: what its run changed in the sandbox worker it ran in (limits, priority, CPU
    affinity, kernel objects left behind...)."""
    files: dict[str, list[ProtectedFileChange]] = Field(default_factory=dict)
    """Per candidate of a repository task: each protected file it changed."""


class NonePassedEvidence(_Model):
    mode: Literal["tests", "reference", "criteria", "questions"]
    """What the candidates failed: the verifier's tests or reference check, the decision judge's
    criteria or questions."""
    first_failures: dict[str, str] = Field(default_factory=dict)
    """Per candidate: its first failing test and why (or the reference check's message, or the
    first criterion below the pass threshold)."""


class BrokenTestsEvidence(_Model):
    tests: dict[str, str] = Field(default_factory=dict)
    """Per broken test (by name): why it is broken."""
    scored: int = 0
    """How many tests (suite cases counted one by one) the candidates were scored on."""


class ClaimCheckEvidence(_Model):
    support: float | None
    """P("the claim is supported by the evidence"); None when that question was refused."""
    challenge: float | None
    """P("there is strong evidence that the claim is wrong"); None when refused."""
    support_threshold: float
    challenge_threshold: float
    reason: Literal["disagreement", "weak_support", "weak_challenge", "weak_both"]
    """Why no verdict: the two answers point opposite ways, or one (or both) is not decisive."""


# -- concerns ------------------------------------------------------------------------------------

class DecisionRefusal(_Concern):
    kind: Literal["decision_refusal"] = "decision_refusal"
    evidence: RefusalEvidence = Field(default_factory=RefusalEvidence)


class DecisionAbstention(_Concern):
    kind: Literal["decision_abstention"] = "decision_abstention"
    evidence: QuestionsEvidence = Field(default_factory=QuestionsEvidence)


class DecisionLowConfidence(_Concern):
    kind: Literal["decision_low_confidence"] = "decision_low_confidence"
    evidence: LowConfidenceEvidence = Field(default_factory=LowConfidenceEvidence)


class DecisionOrderFlip(_Concern):
    kind: Literal["decision_order_flip"] = "decision_order_flip"
    evidence: OrderFlipEvidence = Field(default_factory=OrderFlipEvidence)


class ClaimUndecided(_Concern):
    kind: Literal["claim_undecided"] = "claim_undecided"
    evidence: ClaimCheckEvidence


class OrderInconsistent(_Concern):
    kind: Literal["order_inconsistent"] = "order_inconsistent"
    evidence: PairsEvidence = Field(default_factory=PairsEvidence)


class PreferenceCycle(_Concern):
    kind: Literal["preference_cycle"] = "preference_cycle"
    evidence: CyclesEvidence = Field(default_factory=CyclesEvidence)


class Unparsed(_Concern):
    kind: Literal["unparsed"] = "unparsed"
    evidence: UnparsedEvidence = Field(default_factory=UnparsedEvidence)


class TiedBest(_Concern):
    kind: Literal["tied_best"] = "tied_best"
    evidence: ScoresEvidence = Field(default_factory=ScoresEvidence)


class PanelDisagreement(_Concern):
    kind: Literal["panel_disagreement"] = "panel_disagreement"
    evidence: PanelEvidence


class SandboxFailure(_Concern):
    kind: Literal["sandbox_failure"] = "sandbox_failure"
    evidence: ErrorEvidence


class TaskUnrunnable(_Concern):
    kind: Literal["task_unrunnable"] = "task_unrunnable"
    evidence: ErrorEvidence


class CandidateUnjudged(_Concern):
    kind: Literal["candidate_unjudged"] = "candidate_unjudged"
    evidence: UnjudgedEvidence = Field(default_factory=UnjudgedEvidence)


class WeakIsolation(_Concern):
    kind: Literal["weak_isolation"] = "weak_isolation"
    evidence: IsolationEvidence


class NoCandidatePassed(_Concern):
    kind: Literal["no_candidate_passed"] = "no_candidate_passed"
    evidence: NonePassedEvidence


class Tampering(_Concern):
    kind: Literal["tampering"] = "tampering"
    evidence: TamperingEvidence


class BrokenTests(_Concern):
    kind: Literal["broken_tests"] = "broken_tests"
    evidence: BrokenTestsEvidence


Concern = Annotated[Union[DecisionRefusal, DecisionAbstention, DecisionLowConfidence, DecisionOrderFlip,
                          ClaimUndecided, OrderInconsistent, PreferenceCycle, Unparsed, TiedBest, SandboxFailure,
                          TaskUnrunnable, WeakIsolation, NoCandidatePassed, CandidateUnjudged, Tampering,
                          BrokenTests, PanelDisagreement],
                    Field(discriminator="kind")]
"""Any concern; ``kind`` tells which (it is the JSON discriminator)."""

TASK_PROBLEMS = ("TaskValidationError", "UnsupportedLanguage", "EnvironmentBuildError", "InterpreterUnusable",
                 "BrokenTests")
"""Verifier error types that mean the task lacks something, not that the sandbox broke."""


def verifier_failure(error_type: str, message: str, candidates: list[str]) -> SandboxFailure | TaskUnrunnable:
    """The concern a failed verifier run raises: the task's fault or the environment's."""
    evidence = ErrorEvidence(type=error_type, message=message)
    if error_type in TASK_PROBLEMS:
        return TaskUnrunnable(candidates=candidates, evidence=evidence,
                              message=f"the verifier cannot run this task: {message}")
    return SandboxFailure(candidates=candidates, evidence=evidence,
                          message=f"the sandbox could not run the candidates: {message}")


__all__ = [
    "BrokenTests",
    "CandidateUnjudged",
    "ClaimUndecided",
    "Concern",
    "DecisionAbstention",
    "DecisionLowConfidence",
    "DecisionOrderFlip",
    "DecisionRefusal",
    "NoCandidatePassed",
    "OrderInconsistent",
    "PanelDisagreement",
    "PreferenceCycle",
    "ProtectedFileChange",
    "SandboxFailure",
    "Tampering",
    "TaskUnrunnable",
    "TiedBest",
    "Unparsed",
    "WeakIsolation",
    "verifier_failure",
]
