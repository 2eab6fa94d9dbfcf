"""Model calls for the LLM judge: one request, a strict parse, at most one repair request.

Every call (repairs included) goes into the shared ``CallLedger`` (oracle/results/ledger.py), the same one
the decision judge uses: HTTP requests, cost (None as soon as one price is unknown, never a silent
0), tokens, the probability source and what the endpoint says it applied. ``ask`` is the only place
the judge talks to the model.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Generic, Protocol, TypeVar, Union

from oracle.config.model import LLMJudgeConfig
from oracle.errors import ProviderError
from oracle.results.ledger import CallLedger
from oracle.results.provenance import ProbabilitySource
from oracle.providers.types import Capabilities, ChatMessage, ChatReply, ChatRequest

from oracle.strategies._judging.placement import cache_salt, request_seed
from oracle.strategies.llm_judge.parse import ParseProblem
from oracle.strategies.llm_judge.prompts import prompt_hash, repair_messages

T = TypeVar("T")


class ChatCompleter(Protocol):
    """What the judge needs from a provider client."""

    @property
    def capabilities(self) -> Capabilities: ...

    async def complete(self, req: ChatRequest) -> ChatReply: ...


@dataclass(frozen=True)
class Grader:
    """One judge that answers: its client, its label in the ledger (None: the single ``judge``
    endpoint; a panel member's label otherwise), the settings it judges with (a member's own
    temperature applied) and the run's repeat index (``ctx.extra["repeat"]``, for the cache salt)."""

    client: ChatCompleter
    label: str | None
    cfg: LLMJudgeConfig
    run_repeat: int = 0
    own_answer: str | None = None
    """Commit-first grading: this grader's own answer to the task, its reference for every candidate."""

    @property
    def capabilities(self) -> Capabilities:
        return self.client.capabilities

    async def complete(self, req: ChatRequest) -> ChatReply:
        return await self.client.complete(req)


Source = Union[ProbabilitySource, Callable[[ChatReply], ProbabilitySource]]
"""A call's probability source, or how to tell it from the reply (a seat readout needs logprobs)."""


async def complete(client: ChatCompleter, ledger: CallLedger, req: ChatRequest, *, source: Source,
                   repair: bool = False) -> ChatReply:
    """One call, written into the shared ledger; a failure is written before it propagates.

    A server that ignores ``logprobs`` answers anyway: the client keeps that reply (never retried)
    and stops asking; the judge records ``logprobs_dropped`` and reads the written verdict."""
    member = client.label if isinstance(client, Grader) else None
    try:
        reply = await client.complete(req)
    except ProviderError as exc:
        ledger.add_failure(exc, member=member)  # spent, even though it failed after its retries
        raise
    if req.logprobs and reply.logprobs is None:
        ledger.logprobs_dropped = True
    ledger.add(reply, source=source(reply) if callable(source) else source, template_hash=prompt_hash(),
               repair=repair, member=member)
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


async def ask(client: ChatCompleter, ledger: CallLedger, req: ChatRequest, parse: Callable[[str], T], *,
              source: Source) -> Asked[T]:
    """Ask once; on a parse problem ask once more with the problem quoted; then give up honestly."""
    reply = await complete(client, ledger, req, source=source)
    try:
        return Asked(parse(reply.text), reply, [reply.text], [])
    except ParseProblem as first:
        problem = str(first)
    ledger.repairs += 1
    repair = req.model_copy(update={"messages": repair_messages(list(req.messages), reply.text, problem)})
    second_reply = await complete(client, ledger, repair, source=source, repair=True)
    try:
        return Asked(parse(second_reply.text), second_reply, [reply.text, second_reply.text], [problem])
    except ParseProblem as second:
        return Asked(None, second_reply, [reply.text, second_reply.text], [problem, str(second)])


def chat_request(messages: list[ChatMessage], *, schema: dict[str, Any] | None, capabilities: Capabilities,
                 temperature: float, max_tokens: int, logprobs: bool, top_logprobs: int,
                 repeat: int = 0, run_repeat: int = 0, seed: int = 0) -> ChatRequest:
    """A request using structured output and logprobs only where the endpoint offers them.

    ``repeat`` (which sample of one judgment), ``run_repeat`` and ``seed`` go into the cache salt
    (never sent) and, where the endpoint takes a seed, into the sampling seed."""
    use_lp = logprobs and capabilities.logprobs and capabilities.max_top_logprobs > 0
    return ChatRequest(
        messages=messages, temperature=temperature, max_tokens=max_tokens,
        json_schema=schema if capabilities.structured_output != "none" else None,
        logprobs=use_lp, top_logprobs=min(top_logprobs, capabilities.max_top_logprobs) if use_lp else None,
        seed=request_seed(seed, repeat) if capabilities.seed else None,
        cache_salt=cache_salt(repeat=repeat, run_repeat=run_repeat, seed=seed),
    )


def judge_request(grader: Grader, messages: list[ChatMessage], schema: dict[str, Any] | None, *,
                  repeat: int = 0) -> ChatRequest:
    """``chat_request`` with the grader's own settings."""
    cfg = grader.cfg
    return chat_request(messages, schema=schema, capabilities=grader.capabilities, temperature=cfg.temperature,
                        max_tokens=cfg.max_tokens, logprobs=cfg.logprobs, top_logprobs=cfg.top_logprobs,
                        repeat=repeat, run_repeat=grader.run_repeat, seed=cfg.seed)
