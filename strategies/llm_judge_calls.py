"""Model calls for the LLM judge: one request, a strict parse, at most one repair request.

``Ledger`` counts every call (repairs included), adds up cost (None as soon as one price is
unknown, never a silent 0), tokens, and records what the endpoint says it applied. ``ask`` is the
only place the judge talks to the model.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Generic, Protocol, TypeVar

from oracle.errors import ProviderError, ResponseParseError
from oracle.providers.types import Capabilities, ChatMessage, ChatReply, ChatRequest

from strategies.llm_judge_parse import ParseProblem
from strategies.llm_judge_prompts import repair_messages

T = TypeVar("T")


class ChatCompleter(Protocol):
    """What the judge needs from a provider client."""

    capabilities: Capabilities

    async def complete(self, req: ChatRequest) -> ChatReply: ...


@dataclass
class Ledger:
    """Running totals for one evaluation."""

    calls: int = 0
    repairs: int = 0
    cost_usd: float | None = 0.0
    input_tokens: int = 0
    output_tokens: int = 0
    tokens_known: bool = True
    models_answered: set[str] = field(default_factory=set)
    endpoint_kinds: set[str] = field(default_factory=set)
    sampling_requested: dict[str, Any] = field(default_factory=dict)
    sampling_applied: dict[str, Any] = field(default_factory=dict)
    logprobs_dropped: bool = False
    """The endpoint failed to return requested logprobs once; later calls no longer ask."""

    def record(self, reply: ChatReply) -> None:
        self.calls += 1
        if reply.cost_usd is None or self.cost_usd is None:
            self.cost_usd = None
        else:
            self.cost_usd += reply.cost_usd
        if reply.usage.input_tokens is None or reply.usage.output_tokens is None:
            self.tokens_known = False
        self.input_tokens += reply.usage.input_tokens or 0
        self.output_tokens += reply.usage.output_tokens or 0
        prov = reply.provenance
        if prov.model_answered:
            self.models_answered.add(prov.model_answered)
        self.endpoint_kinds.add(prov.endpoint_kind)
        self.sampling_requested = dict(prov.sampling_requested)
        self.sampling_applied = dict(prov.sampling_applied)

    async def complete(self, client: ChatCompleter, req: ChatRequest) -> ChatReply:
        if self.logprobs_dropped and req.logprobs:
            req = req.model_copy(update={"logprobs": False, "top_logprobs": None})
        try:
            reply = await client.complete(req)
        except ResponseParseError:
            self.calls += 1
            self.cost_usd = None  # a reply came back and may be billed; its price is unknown to us
            if not req.logprobs:
                raise
            # Some OpenAI-compatible servers ignore logprobs; the verdict does not need them.
            self.logprobs_dropped = True
            return await self.complete(client, req)
        except ProviderError:
            self.calls += 1  # spent, even though it failed after its retries
            raise
        self.record(reply)
        return reply


@dataclass
class Asked(Generic[T]):
    """The outcome of one question: the parsed value (None if unreadable) and the replies."""

    value: T | None
    reply: ChatReply
    """The reply the value was read from (the repair reply when a repair was needed)."""
    raw: list[str]
    problems: list[str]

    @property
    def repaired(self) -> bool:
        return len(self.raw) > 1 and self.value is not None

    def evidence(self) -> dict[str, Any]:
        out: dict[str, Any] = {"parsed": self.value is not None, "repaired": self.repaired}
        if self.problems:
            out["problems"] = self.problems
        if self.value is None or self.problems:
            out["raw"] = self.raw
        return out


async def ask(client: ChatCompleter, ledger: Ledger, req: ChatRequest, parse: Callable[[str], T]) -> Asked[T]:
    """Ask once; on a parse problem ask once more with the problem quoted; then give up honestly."""
    reply = await ledger.complete(client, req)
    try:
        return Asked(parse(reply.text), reply, [reply.text], [])
    except ParseProblem as first:
        problem = str(first)
    ledger.repairs += 1
    repair = req.model_copy(update={"messages": repair_messages(list(req.messages), reply.text, problem)})
    second_reply = await ledger.complete(client, repair)
    try:
        return Asked(parse(second_reply.text), second_reply, [reply.text, second_reply.text], [problem])
    except ParseProblem as second:
        return Asked(None, second_reply, [reply.text, second_reply.text], [problem, str(second)])


def chat_request(messages: list[ChatMessage], *, schema: dict[str, Any] | None, capabilities: Capabilities,
                 temperature: float, max_tokens: int, logprobs: bool, top_logprobs: int) -> ChatRequest:
    """A request using structured output and logprobs only where the endpoint offers them."""
    use_lp = logprobs and capabilities.logprobs and capabilities.max_top_logprobs > 0
    return ChatRequest(
        messages=messages, temperature=temperature, max_tokens=max_tokens,
        json_schema=schema if capabilities.structured_output != "none" else None,
        logprobs=use_lp, top_logprobs=min(top_logprobs, capabilities.max_top_logprobs) if use_lp else None,
    )
