"""Three ways to get a probability per option, behind one method: ``ask(state, questions)``.

- native: a decision endpoint (``/v1/decisions`` or ``/v1/systemone``); all questions in one call.
- logprob_readout: any OpenAI-compatible chat endpoint with logprobs; one 1-token call per question.
- sampled: k samples per question at temperature > 0, where the endpoint has no logprobs.

The readout falls back to sampling by itself when the endpoint turns out to ignore ``logprobs``:
the reply without them is the server's answer about a capability (the client learns it once and
never retries it), that question is sampled instead, and once the client knows, later questions
go straight to sampling (``logprobs_available``) without spending a readout call first.

Each backend returns typed ``DecisionAnswer``\\ s (with ``probability_source``) or an
``UnreadableAnswer`` per question, and writes every call into the shared ``CallLedger``
(oracle/results/ledger.py: call id, model, latency, tokens, cost, probability source, template hash) that
becomes the result's provenance. Provider faults propagate as
``ProviderError``; the judge turns them into a failed result.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field
from typing import Any, Awaitable, Callable, Literal, Sequence

from oracle.errors import ProviderError, ProviderTimeout
from oracle.results.ledger import CallLedger
from oracle.providers.types import ChatReply, ChatRequest, DecisionAnswer, DecisionReply, DecisionRequest
from oracle.tasks.questions import Question
from oracle.strategies.decision_judge.readout import (PROMPT_TEMPLATE_HASH, UnreadableAnswer, parse_logprob_reply,
                                                      parse_samples, readout_request, sampled_request)
from oracle.strategies.decision_judge.requests import decision_request, to_decision_question

BackendKind = Literal["native", "logprob_readout", "sampled", "panel"]
"""``panel``: each member through its own backend (strategies/decision_judge/panel.py)."""
ChatCall = Callable[[ChatRequest], Awaitable[ChatReply]]
DecideCall = Callable[[DecisionRequest], Awaitable[DecisionReply]]

DEFAULT_TOP_LOGPROBS = 20


@dataclass
class BackendAnswers:
    answers: dict[str, DecisionAnswer] = field(default_factory=dict)
    unreadable: dict[str, UnreadableAnswer] = field(default_factory=dict)
    panel: dict[str, dict[str, Any]] = field(default_factory=dict)
    """A panel's answers only: per question, what each member said (strategies/decision_judge/panel.py)."""


@dataclass(frozen=True)
class CallTag:
    """What every call of one backend carries: the panel member it speaks for (ledger attribution)
    and the cache salt that keeps a run's repeats apart (``ctx.extra["repeat"]``; 0 is left out, so
    a plain single run keys its cache entries as before)."""

    member: str | None = None
    run_repeat: int = 0

    def salt(self, **extra: int) -> dict[str, Any] | None:
        """The ``cache_salt`` of one request: the run repeat and ``extra`` (a sample's index, kept
        even at 0 so every one of k samples is salted), or None when there is nothing to tell apart."""
        salt: dict[str, Any] = {**extra, **({"run_repeat": self.run_repeat} if self.run_repeat else {})}
        return salt or None


async def _with_timeout(awaitable: Awaitable[Any], timeout_s: float, what: str, ledger: CallLedger,
                        member: str | None = None) -> Any:
    """The call, bounded in time; a failure is written into the ledger before it propagates."""
    try:
        return await asyncio.wait_for(awaitable, timeout_s)
    except TimeoutError:
        error = ProviderTimeout(f"{what} exceeded the decision judge timeout of {timeout_s:g} s")
        ledger.add_failure(error, member=member)
        raise error from None
    except ProviderError as exc:
        ledger.add_failure(exc, member=member)
        raise


class NativeBackend:
    """A native decision endpoint: one call carries every question about a state."""

    kind: BackendKind = "native"

    def __init__(self, decide: DecideCall, *, model: str, ledger: CallLedger, timeout_s: float,
                 tag: CallTag = CallTag()) -> None:
        self._decide, self.model, self._ledger, self._timeout_s = decide, model, ledger, timeout_s
        self._tag = tag

    async def ask(self, state: dict[str, Any] | str, questions: Sequence[Question]) -> BackendAnswers:
        request = decision_request(state, questions).model_copy(update={"cache_salt": self._tag.salt()})
        reply: DecisionReply = await _with_timeout(
            self._decide(request), self._timeout_s, "decision call", self._ledger, self._tag.member)
        self._ledger.add(reply, source="native_decision", member=self._tag.member)
        out = BackendAnswers()
        for q in questions:
            answer = reply.answers.get(q.id)
            if answer is None:
                out.unreadable[q.id] = UnreadableAnswer(q.id, "", "the reply has no answer for this question")
            else:
                out.answers[q.id] = answer
        return out


class LogprobReadoutBackend:
    """Single-token labels on a chat endpoint; questions of one state asked concurrently."""

    kind: BackendKind = "logprob_readout"

    def __init__(self, chat: ChatCall, *, model: str, ledger: CallLedger, timeout_s: float,
                 top_logprobs: int = DEFAULT_TOP_LOGPROBS, coverage_floor: float = 0.0,
                 fallback: "SampledBackend | None" = None, sampler: "SampledBackend | None" = None,
                 logprobs_available: Callable[[], bool] = lambda: True, tag: CallTag = CallTag()) -> None:
        """``fallback``: asked below the coverage floor (``low_coverage: sample``). ``sampler``:
        asked when the endpoint sends no logprobs (defaults to ``fallback``). ``logprobs_available``:
        what the client has learned about the endpoint so far (``client.capabilities.logprobs``)."""
        self._chat, self.model, self._ledger, self._timeout_s = chat, model, ledger, timeout_s
        self._top_logprobs = top_logprobs
        self._coverage_floor = coverage_floor
        self._fallback = fallback
        self._sampler = sampler or fallback
        self._logprobs_available = logprobs_available
        self._tag = tag

    async def _one(self, state: dict[str, Any] | str, question: Question) -> DecisionAnswer:
        """One readout; sampled instead where the endpoint sends no logprobs, and sampled again
        below the coverage floor when a fallback is configured."""
        if self._sampler is not None and not self._logprobs_available():
            return await self._sampler.one(state, question)
        request, labels = readout_request(state, to_decision_question(question),
                                          top_logprobs=self._top_logprobs)
        request = request.model_copy(update={"cache_salt": self._tag.salt()})
        reply: ChatReply = await _with_timeout(self._chat(request), self._timeout_s, "readout call", self._ledger,
                                               self._tag.member)
        self._ledger.add(reply, source="logprob_readout", template_hash=PROMPT_TEMPLATE_HASH,
                         member=self._tag.member)
        if reply.logprobs is None and self._sampler is not None:
            return await self._sampler.one(state, question)   # the server ignores logprobs
        try:
            answer = parse_logprob_reply(reply, labels)
        except UnreadableAnswer:
            if self._fallback is None:
                raise
            return await self._fallback.one(state, question)
        if self._fallback is not None and (answer.covered_mass or 0.0) < self._coverage_floor:
            return await self._fallback.one(state, question)
        return answer

    async def ask(self, state: dict[str, Any] | str, questions: Sequence[Question]) -> BackendAnswers:
        return await _gather_answers(questions, [self._one(state, q) for q in questions])


class SampledBackend:
    """k samples per question at temperature > 0, counted; for endpoints without logprobs.

    Each sample's request carries its index in ``cache_salt``: the k bodies are byte-identical, so
    without it a response cache would store one reply and return it k times (one sample counted k
    times, a distribution of 0 or 1)."""

    kind: BackendKind = "sampled"

    def __init__(self, chat: ChatCall, *, model: str, ledger: CallLedger, timeout_s: float,
                 samples: int, temperature: float, tag: CallTag = CallTag()) -> None:
        self._chat, self.model, self._ledger, self._timeout_s = chat, model, ledger, timeout_s
        self._samples, self._temperature = samples, temperature
        self._tag = tag

    async def _sample(self, request: ChatRequest, index: int) -> str:
        request = request.model_copy(update={"cache_salt": self._tag.salt(sample=index)})
        reply: ChatReply = await _with_timeout(self._chat(request), self._timeout_s, "sampling call", self._ledger,
                                               self._tag.member)
        self._ledger.add(reply, source="sampled", template_hash=PROMPT_TEMPLATE_HASH, member=self._tag.member)
        return reply.text

    async def one(self, state: dict[str, Any] | str, question: Question) -> DecisionAnswer:
        """k samples of one question, counted (also the readout's fallback below its floor)."""
        request, labels = sampled_request(state, to_decision_question(question),
                                          temperature=self._temperature)
        self._ledger.samples_per_question = self._samples
        texts = await asyncio.gather(*(self._sample(request, i) for i in range(self._samples)))
        return parse_samples(texts, labels)

    async def ask(self, state: dict[str, Any] | str, questions: Sequence[Question]) -> BackendAnswers:
        return await _gather_answers(questions, [self.one(state, q) for q in questions])


async def _gather_answers(questions: Sequence[Question],
                          jobs: Sequence[Awaitable[DecisionAnswer]]) -> BackendAnswers:
    """Run per-question jobs together; an unreadable answer is kept, a provider fault propagates."""
    results = await asyncio.gather(*jobs, return_exceptions=True)
    out = BackendAnswers()
    for q, result in zip(questions, results):
        if isinstance(result, UnreadableAnswer):
            out.unreadable[q.id] = result
        elif isinstance(result, BaseException):
            raise result
        else:
            out.answers[q.id] = result
    return out


def elapsed_ms(start: float) -> float:
    return (time.perf_counter() - start) * 1000.0
