"""Result models: what an evaluator returns and what the Oracle hands back.

Seams: ``concerns`` (typed) are what escalation reads, ``provenance`` (typed, oracle/results/provenance.py)
is how the verdict was produced, ``details`` is free-form evidence for people.

A result that could not be scored says so (``status``, ``error``, ``score=None``); nothing is ever
mapped to a midpoint. Status names are a contract: ok, failed, abstained, unparsed, escalated,
pending, skipped.
"""

from __future__ import annotations

from enum import Enum
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from oracle.results.concerns import Concern
from oracle.results.provenance import EvaluationProvenance
from oracle.routing.route import Route
from oracle.rubrics.model import RubricRef


class Status(str, Enum):
    """Outcome of an evaluation."""

    ok = "ok"
    """Evaluated and scored."""
    failed = "failed"
    """Our side failed (model, network, sandbox, missing evaluator); ``error`` says why."""
    abstained = "abstained"
    """Evaluated but deliberately not scored (e.g. the decision model chose its abstain option)."""
    unparsed = "unparsed"
    """The model answered but the reply could not be read; the raw text is kept."""
    escalated = "escalated"
    """A human answered an escalation request and the verdict reflects it."""
    pending = "pending"
    """Waiting for a human answer stored in the escalation store."""
    skipped = "skipped"
    """Not run, or not run to the end, by a budget or a selection; ``reason`` says which (``budget``).
    The calls and cost spent before it stopped are kept; no candidate is scored."""

    def __str__(self) -> str:
        return self.value


class ErrorInfo(BaseModel):
    """Why an evaluation failed: an error type and a human-readable message."""

    model_config = ConfigDict(extra="forbid")

    type: str
    message: str

    @classmethod
    def from_exception(cls, exc: BaseException) -> "ErrorInfo":
        return cls(type=type(exc).__name__, message=str(exc) or type(exc).__name__)


class CandidateResult(BaseModel):
    """The verdict on one candidate trajectory."""

    model_config = ConfigDict(extra="forbid")

    id: str
    score: float | None = None
    """Normalized 0..1; None when not scored (abstained, unparsed, failed)."""
    passed: bool | None = None
    status: Status = Status.ok
    details: dict[str, Any] = Field(default_factory=dict)
    """Evaluator-specific evidence: per-test outcomes, per-criterion probabilities, rationales."""


class BrokenTest(BaseModel):
    """A test that is broken: the task's fault (it does not compile, imports what the test side
    lacks, raised before asking the candidate anything, was run by no candidate, or fails on the
    task's reference solution). It was scored for no candidate."""

    model_config = ConfigDict(extra="forbid")

    test: str
    """The test's name (a suite's case: its name with the node id)."""
    reason: str


class EvaluationResult(BaseModel):
    """What one evaluator concluded about all candidates of a task."""

    model_config = ConfigDict(extra="forbid")

    evaluator: str
    """The evaluator that produced it, by the name it was run under: a built-in kind
    (``decision_judge``, ``llm_judge``, ``verifier``), a plugin's name, or the unknown name a caller
    asked for (then ``status`` is ``failed`` and ``error`` names it)."""
    status: Status
    best: list[str] = Field(default_factory=list)
    """Ids of the best candidate(s); several when tied."""
    ranking: list[str] = Field(default_factory=list)
    """All scored candidate ids, best first; ties broken deterministically (see ``details``)."""
    candidates: list[CandidateResult] = Field(default_factory=list)
    calls: int = 0
    """Model calls or sandbox runs spent."""
    cost_usd: float | None = None
    """None when any call's price is unknown (never silently 0)."""
    latency_ms: float = 0.0
    error: ErrorInfo | None = None
    reason: str | None = None
    """Why a ``skipped`` result was not run: ``budget`` (oracle/providers/budget.py); None otherwise."""
    explanation: str | None = None
    details: dict[str, Any] = Field(default_factory=dict)
    """Evaluator-specific evidence for people and reports; nothing downstream reads it by key."""
    concerns: list[Concern] = Field(default_factory=list)
    """What the evaluator noticed that may need a human (oracle/results/concerns.py); escalation reads these."""
    broken_tests: list[BrokenTest] = Field(default_factory=list)
    """The verifier's tests that are the task's fault, each once; no candidate was scored on them
    (scores are over the tests that ran). A ``broken_tests`` concern says so too."""
    provenance: EvaluationProvenance = Field(default_factory=EvaluationProvenance)
    """Calls (models, endpoint, probability source, tokens, cost, sampling, template hash) and, where
    code ran, the sandbox and verdict integrity; the same shape for every evaluator."""

    @classmethod
    def failure(cls, evaluator: str, exc_or_message: BaseException | str, *,
                error_type: str | None = None, **fields: Any) -> "EvaluationResult":
        """A failed result: our fault, no candidate scored."""
        if isinstance(exc_or_message, BaseException):
            error = ErrorInfo.from_exception(exc_or_message)
        else:
            error = ErrorInfo(type=error_type or "EvaluationFailed", message=exc_or_message)
        return cls(evaluator=evaluator, status=Status.failed, error=error, **fields)

    def skipped(self, reason: str, error: BaseException, *, calls: int | None = None,
                cost_usd: float | None = None) -> "EvaluationResult":
        """This result as ``skipped`` for ``reason``: its calls, cost and provenance kept (``calls``
        and ``cost_usd``, when given, count what the ledger could not see: a refused call's earlier
        attempts, calls cancelled in flight), no verdict (no best, no ranking, each candidate unscored
        and ``skipped``), no concerns."""
        spent: dict[str, Any] = {}
        if calls is not None and calls > self.calls:
            spent["calls"] = calls
        if cost_usd is not None and (self.cost_usd is None or cost_usd > self.cost_usd):
            spent["cost_usd"] = cost_usd
        return self.model_copy(update={**spent,
            "status": Status.skipped, "reason": reason, "best": [], "ranking": [], "concerns": [],
            "candidates": [CandidateResult(id=c.id, status=Status.skipped) for c in self.candidates],
            "error": ErrorInfo.from_exception(error), "details": {},
            "explanation": f"not run to the end: {error}"})

    def candidate(self, candidate_id: str) -> CandidateResult | None:
        return next((c for c in self.candidates if c.id == candidate_id), None)


class Escalation(BaseModel):
    """A request for a human: a targeted question, the options, and the evidence behind it."""

    model_config = ConfigDict(extra="forbid")

    id: str
    reason: str
    """Reason code, e.g. low_route_confidence, no_feasible_evaluator, inseparable_candidates."""
    question: str
    """A specific question naming the missing fact or the candidates that could not be separated."""
    options: list[str] | None = None
    blocking: bool = False
    """True when the verdict cannot stand without the answer."""
    evidence: dict[str, Any] = Field(default_factory=dict)
    answer: str | None = None
    """The human's answer, once given."""


class OracleResult(BaseModel):
    """The whole answer for one task: route trace, evaluator result, escalation request."""

    model_config = ConfigDict(extra="forbid")

    task_id: str
    status: Status
    route: Route
    result: EvaluationResult | None = None
    escalation: Escalation | None = None
    history: list[dict[str, Any]] = Field(default_factory=list)
    """Earlier evaluations and human answers when this result comes from a resume."""
    rubric: RubricRef | None = None
    """The rubric release the task was judged with (name, version, content hash, evidence status)."""

    def to_json(self) -> str:
        """Stable JSON (sorted keys) so runs diff cleanly."""
        from oracle._internal.canonical import canonical_json

        return canonical_json(self.model_dump(mode="json"))
