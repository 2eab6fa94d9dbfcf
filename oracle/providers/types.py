"""Typed request and reply models shared by every provider client.

Evaluators speak only these types; the wire formats (OpenAI chat, Anthropic Messages, the two
decision formats) are translated in the client modules. Keeping one internal model means a judge
does not care which endpoint answered, and the provenance reads the same for all of them.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

EndpointKind = Literal["openai_chat", "anthropic_messages", "decisions", "systemone"]
ProbabilitySource = Literal["native", "logprob_readout", "sampled", "verbalized", "panel"]
"""Where an answer's probabilities came from; ``panel``: combined from a decision judge panel's members."""


class Capabilities(BaseModel):
    """What a provider/model can do; evaluators read it to pick a method."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    logprobs: bool = False
    max_top_logprobs: int = 0
    seed: bool = False
    structured_output: Literal["json_schema", "json_object", "none"] = "none"
    native_decisions: bool = False


class ChatMessage(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    role: Literal["system", "user", "assistant"]
    content: str


class ChatRequest(BaseModel):
    """One chat completion request, endpoint-neutral."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    messages: list[ChatMessage]
    temperature: float = 0.0
    max_tokens: int = 512
    seed: int | None = None
    logprobs: bool = False
    top_logprobs: int | None = None
    json_schema: dict[str, Any] | None = None
    """When set, ask for structured output matching this schema (where supported)."""
    stop: list[str] | None = None
    cache_salt: dict[str, Any] | None = None
    """Never sent: what tells apart requests whose bodies are alike but must not share a cached
    reply (the repeat index of a sampled judgment, the run's repeat, the placement seed). It enters
    the response cache's key beside the body (oracle/providers/_cache.py)."""


class TokenLogprob(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    token: str
    logprob: float
    top: dict[str, float] = Field(default_factory=dict)
    """Alternative token -> logprob at this position."""


class Usage(BaseModel):
    """Token counts as the server reported them; None where it did not (or reported nonsense)."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    input_tokens: int | None = None
    output_tokens: int | None = None

    @classmethod
    def read(cls, block: Any, input_key: str, output_key: str) -> "Usage":
        """Best effort: usage is metadata, so a garbage block never costs a valid answer.

        A count is kept when it is a non-negative integer (or a string of digits, as some proxies
        send); anything else — a float, a list, a negative number, a missing block — becomes None,
        which makes the cost unknown rather than wrong.
        """
        if not isinstance(block, dict):
            return cls()
        return cls(input_tokens=_count(block.get(input_key)), output_tokens=_count(block.get(output_key)))


def _count(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value if 0 <= value < 10 ** 15 else None
    if isinstance(value, str) and value.isascii() and value.isdigit() and len(value) < 16:
        return int(value)
    return None


class Provenance(BaseModel):
    """Where a reply came from and how it was produced."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    endpoint_kind: EndpointKind
    base_url: str
    model_requested: str | None
    """None: no model named (a Decisions endpoint's default model)."""
    model_answered: str | None = None
    request_id: str | None = None
    latency_ms: float = 0.0
    attempts: int = 1
    cached: bool = False
    sampling_requested: dict[str, Any] = Field(default_factory=dict)
    sampling_applied: dict[str, Any] = Field(default_factory=dict)
    """What the endpoint is known to have honoured (e.g. no seed on Anthropic)."""


class ChatReply(BaseModel):
    """A chat completion: text, optional logprobs, usage, cost and provenance."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    text: str
    logprobs: list[TokenLogprob] | None = None
    finish_reason: str | None = None
    usage: Usage = Field(default_factory=Usage)
    cost_usd: float | None = None
    provenance: Provenance


class DecisionQuestion(BaseModel):
    """One question in the internal decision request (wire-neutral).

    type: likelihood (noul / predicate on the wire), choice (options / choices), score (levels).
    """

    model_config = ConfigDict(extra="forbid", frozen=True)
    id: str
    type: Literal["likelihood", "choice", "score"]
    instructions: str
    options: dict[str, str] | None = None
    levels: list[str] | None = None


class DecisionRequest(BaseModel):
    """The state the model sees (free text or structured fields) plus the questions."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    state: dict[str, Any] | str
    questions: list[DecisionQuestion]
    cache_salt: dict[str, Any] | None = None
    """Never sent: what tells apart requests whose bodies are alike but must not share a cached
    reply (the repeat index of a sampled judgment, the run's repeat, the placement seed). It enters
    the response cache's key beside the body (oracle/providers/_cache.py)."""


class DecisionAnswer(BaseModel):
    """One answered question: a probability per label (yes/no, option or level), or a refusal."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    question_id: str
    probabilities: dict[str, float] = Field(default_factory=dict)
    confidence: float | None = None
    """Native endpoints: our own confidence, computed from ``probabilities`` with the System One
    reference formula (``oracle.providers.decisions.reference_confidence``), whatever the server says."""
    server_confidence: float | None = None
    """The confidence the server itself reported (None when it sent none); kept for provenance only,
    since servers disagree on what it means."""
    refused: bool = False
    refusal_reason: str | None = None
    probability_source: ProbabilitySource = "native"
    covered_mass: float | None = None
    """logprob readout: label probability mass before renormalization."""


class DecisionReply(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    answers: dict[str, DecisionAnswer]
    """Keyed by question id."""
    usage: Usage = Field(default_factory=Usage)
    cost_usd: float | None = None
    provenance: Provenance
