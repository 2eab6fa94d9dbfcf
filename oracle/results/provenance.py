"""Provenance: one typed record of how a verdict was produced, the same shape for every evaluator.

Why one model: a reader (a batch summary, a benchmark, the escalation checks, a person diffing two
runs) should find "which model answered", "what did it cost" and "did the code run isolated" in the
same place whichever evaluator judged. The judges fill the per-call part through ``CallLedger``
(oracle/results/ledger.py); the verifier fills ``execution``. Fields that do not apply stay None or empty
and are left out of the JSON (see ``EvaluationProvenance`` serialisation), so a verifier result
does not carry twenty null model fields.

Only pydantic (and the deprecation helper) is imported here: ``oracle.results.result`` depends on
this module and ``import oracle`` must stay light.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import AliasChoices, BaseModel, ConfigDict, Field, SerializerFunctionWrapHandler, model_serializer

from oracle._internal.moved import renamed

ProbabilitySource = Literal["native_decision", "logprob_readout", "sampled", "verbalized"]
"""Where a call's probability (or score) came from: a decision endpoint's own distribution, the
token logprobs of a chat reply, the frequency over k samples, or a number the model wrote."""

Integrity = Literal["isolated", "in_process", "shared_process", "reference", "trajectory"]
"""How far a verifier verdict can be trusted: tests ran in their own sandboxed process (isolated),
inside the candidate's process where it could forge them (in_process), a repository's own tests
importing the candidate's code in one sandboxed process, with the defences of docs/repository.md
(shared_process: never called isolated), or no code ran (reference; trajectory: an agent's
recorded tool calls and results compared as data)."""

ISOLATION_ORDER = ("none", "rlimits", "landlock", "namespaces")
"""Sandbox isolation levels, weakest to strongest."""


class CallRecord(BaseModel):
    """One model call that returned a reply (retries of the same call are its ``attempts``)."""

    model_config = ConfigDict(extra="forbid")

    call_id: str | None = None
    """The endpoint's request id, when it gave one."""
    endpoint_kind: str
    base_url: str
    model_requested: str | None = None
    model_answered: str | None = None
    probability_source: ProbabilitySource
    prompt_template_hash: str | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None
    cost_usd: float | None = None
    """What the call cost when it was made: None when the price is unknown (never a silent 0). A
    cache hit keeps its original cost here; nothing was spent on it this time (``cached``)."""
    latency_ms: float = 0.0
    attempts: int = 1
    cached: bool = False
    repair: bool = False
    member: str | None = None
    """The panel member who made the call (``llm_judge.panel``/``decision_judge.panel``); None: no panel."""
    """A re-ask after an unreadable reply."""
    sampling_requested: dict[str, Any] = Field(default_factory=dict)
    sampling_applied: dict[str, Any] = Field(default_factory=dict)
    """What the endpoint is known to have honoured (e.g. no seed on Anthropic)."""


class FailedCall(BaseModel):
    """A call that raised after its retries: its requests still count."""

    model_config = ConfigDict(extra="forbid")

    error: str
    attempts: int = 1
    member: str | None = None
    """The panel member whose call it was (None: no panel)."""


class Tokens(BaseModel):
    """Token totals; None as soon as one call's count is unknown."""

    model_config = ConfigDict(extra="forbid")

    input: int | None = None
    output: int | None = None


class MemberTotals(BaseModel):
    """One panel member's share of an evaluation's calls."""

    model_config = ConfigDict(extra="forbid")

    model_requested: str | None = None
    base_url: str | None = None
    calls: int = 0
    requests: int = 0
    cached_calls: int = 0
    tokens: Tokens = Field(default_factory=Tokens)
    cost_usd: float | None = None


class Execution(BaseModel):
    """Where candidate code ran (verifier only)."""

    model_config = ConfigDict(extra="forbid")

    code_run: bool
    integrity: Integrity | None = None
    """None when the verifier stopped before running anything (an unsupported language, say)."""
    isolation_level: str | None = None
    """namespaces > landlock > rlimits; None when no code ran."""
    backend: str | None = None
    """Sandbox backend (nsjail, bubblewrap, landlock, rlimits)."""
    backend_version: str | None = None
    """Which build of the backend: bubblewrap's version, nsjail's package and binary hash, the kernel."""
    interpreters: dict[str, str] = Field(default_factory=dict)
    environment: dict[str, Any] = Field(default_factory=dict)
    """What the candidates ran with (task.environment or verifier.environment): ``source``, the
    ``python`` interpreter and its ``python_version``; for requirements the cache ``key``, the
    ``content_hash`` of what was installed, ``installed`` (name==version) and ``reused``; the
    ``node_modules`` directory. Empty when no environment was named."""
    languages_supported: list[str] = Field(default_factory=list)
    sandbox_layers: dict[str, Any] = Field(default_factory=dict)
    """Extra layers in force as the sandbox reports them (cgroups, uid drop, limits)."""
    pytest_version: str | None = None
    """The test side's pytest, for tasks with ``pytest`` tests."""
    pytest_origin: Literal["pinned", "environment"] | None = None
    """Where that pytest came from: the verifier's pinned copy, or the task's environment."""
    repository: dict[str, Any] = Field(default_factory=dict)
    """Repository tasks: the base ``commit`` the candidates' trees were made from, its
    ``file_count``, and the settings that judged changes to the protected surface."""
    reruns: dict[str, int] = Field(default_factory=dict)
    """Runs repeated on our account, by reason: ``worker_tampered`` (the run met a sandbox worker an
    earlier run had changed; rerun on a fresh one), ``starved`` (no CPU; rerun alone). Each test's
    record lists its own under ``reruns``."""


_KEEP_WHEN_CALLED = frozenset({"cost_usd", "tokens", "requests", "retries"})
"""Fields whose null or zero is a fact (an unknown price) once a model was called."""


class EvaluationProvenance(BaseModel):
    """Everything needed to reproduce or audit one evaluation (see README "Result JSON")."""

    model_config = ConfigDict(extra="forbid")

    evaluator: dict[str, Any] = Field(default_factory=dict,
                                      validation_alias=AliasChoices("evaluator", "strategy"))
    """The evaluator's spec: name, version, settings that differ from the defaults. Read from the
    key ``strategy`` too (its name before the evaluators had one word), so stored results load."""
    config_hash: str | None = None
    mode: str | None = None
    """How the evaluator judged: pointwise/pairwise/cascade, questions/criteria/comparison, tests/reference."""
    # -- model calls (the judges) ---------------------------------------------------------------
    model_requested: str | None = None
    models_answered: list[str] = Field(default_factory=list)
    endpoint_kinds: list[str] = Field(default_factory=list)
    base_url: str | None = None
    decision_backend: str | None = None
    """Decision judge: native, logprob_readout or sampled."""
    probability_sources: list[ProbabilitySource] = Field(default_factory=list)
    prompt_template_hash: str | None = None
    prompt_templates: dict[str, str] = Field(default_factory=dict)
    """Per-template hashes, where an evaluator uses several."""
    structured_output: str | None = None
    logprobs_dropped: bool = False
    """The endpoint failed to return requested logprobs once; later calls no longer asked."""
    calls: list[CallRecord] = Field(default_factory=list)
    failed_calls: list[FailedCall] = Field(default_factory=list)
    requests: int = 0
    """HTTP requests sent (every attempt, failed calls included, cache hits not)."""
    retries: int = 0
    """How many of ``requests`` repeated a failed attempt (429, 5xx, connection, unreadable body)."""
    samples: int | None = None
    """Where a probability came from sampling (source ``sampled``): the samples per question."""
    repairs: int = 0
    tokens: Tokens = Field(default_factory=Tokens)
    cost_usd: float | None = None
    """Spent by this evaluation: cache hits count 0 (their original cost is ``cached_cost_usd``)."""
    cached_calls: int = 0
    """Calls answered from the response cache (no request sent)."""
    cached_cost_usd: float | None = None
    """What the cache hits cost when they were first made (None: a price unknown, or no hit)."""
    seed: int | None = None
    """The placement seed the judge used (``llm_judge.seed``), where order mattered."""
    panel: dict[str, MemberTotals] | None = None
    """Per panel member: its calls, requests, tokens and cost (None: no panel)."""
    latency_ms: float | None = None
    # -- code execution (the verifier) ----------------------------------------------------------
    execution: Execution | None = None

    @property
    def strategy(self) -> dict[str, Any]:
        """Deprecated name of ``evaluator``."""
        renamed("EvaluationProvenance.strategy", "EvaluationProvenance.evaluator")
        return self.evaluator

    @strategy.setter
    def strategy(self, value: dict[str, Any]) -> None:
        renamed("EvaluationProvenance.strategy", "EvaluationProvenance.evaluator")
        self.evaluator = value

    @property
    def integrity(self) -> Integrity | None:
        return self.execution.integrity if self.execution else None

    @property
    def isolation_level(self) -> str | None:
        return self.execution.isolation_level if self.execution else None

    @model_serializer(mode="wrap")
    def _readable(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        """Leave out what does not apply (None, empty lists and maps, False flags, zero counters)
        so each evaluator's JSON shows its own facts; loading fills the defaults back in. Where a
        model was called, ``cost_usd`` and ``tokens`` stay even when unknown (null is the fact)."""
        data = handler(self)
        called = bool(self.calls or self.failed_calls)
        return {k: v for k, v in data.items()
                if (called and k in _KEEP_WHEN_CALLED) or not _empty(v)}


def _empty(value: Any) -> bool:
    if isinstance(value, dict):
        return all(v is None for v in value.values())  # also {} and tokens nobody counted
    return value is None or value is False or (isinstance(value, (list, int, float)) and not value)


__all__ = ["ISOLATION_ORDER", "CallRecord", "EvaluationProvenance", "Execution", "FailedCall", "Integrity",
           "ProbabilitySource", "Tokens"]
