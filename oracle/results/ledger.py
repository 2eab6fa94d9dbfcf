"""One ledger of model calls, shared by the decision judge and the LLM judge.

Why one: the two judges used to keep their own ledgers and wrote different provenance keys
(``models_answered`` vs ``model_answered``, a list vs a string ``endpoint_kind``), so a reader had
to know which judge ran. Both now write ``CallRecord``\\ s here and read their totals and their
``EvaluationProvenance`` from it.

Counting rules, the same for both judges:

- ``requests`` counts HTTP requests sent: every attempt of every call, failed calls included,
  cache hits not. A row that says ``calls: 0`` after five retried 500s would hide the load (and
  maybe the bill) it caused. ``retries`` says how many of those requests were repeats of a call
  that had failed (so ``requests - retries`` is the number of logical calls that reached the wire).
- cost is None as soon as one reply's price is unknown, or a 2xx reply could not be read (it may
  be billed, we cannot price it); never a silent 0. ``cost_usd`` is what this evaluation spent: a
  cache hit costs 0 now, and its original cost is reported apart (``cached_cost_usd``), so a rerun
  from the cache says both that it was free and what the answers cost when first bought.
- a panel member's calls carry its label (``member``); ``by_member`` gives each member's totals.
- tokens are None as soon as one reply did not report them.
"""

from __future__ import annotations

from typing import Any, Protocol

from oracle.errors import ResponseParseError
from oracle.results.provenance import (CallRecord, EvaluationProvenance, FailedCall, MemberTotals, ProbabilitySource,
                                      Tokens)


class _Usage(Protocol):
    @property
    def input_tokens(self) -> int | None: ...
    @property
    def output_tokens(self) -> int | None: ...


class _Reply(Protocol):
    """What the ledger reads from a ChatReply or a DecisionReply (read-only: replies are frozen)."""

    @property
    def usage(self) -> _Usage: ...
    @property
    def cost_usd(self) -> float | None: ...
    @property
    def provenance(self) -> Any: ...


class CallLedger:
    """Every model call of one evaluation, in the order they completed."""

    def __init__(self) -> None:
        self.records: list[CallRecord] = []
        self.failures: list[FailedCall] = []
        self.repairs = 0
        self.logprobs_dropped = False
        """The endpoint failed to return requested logprobs once; later calls no longer ask."""
        self.samples_per_question: int | None = None
        """Set when answers were read by sampling: the k samples each such question got."""
        self._unpriced = False
        self._unpriced_members: set[str] = set()

    def add(self, reply: _Reply, *, source: ProbabilitySource, template_hash: str | None = None,
            repair: bool = False, member: str | None = None) -> CallRecord:
        p = reply.provenance
        record = CallRecord(
            call_id=p.request_id, endpoint_kind=p.endpoint_kind, base_url=p.base_url,
            model_requested=p.model_requested, model_answered=p.model_answered, probability_source=source,
            prompt_template_hash=template_hash, input_tokens=reply.usage.input_tokens,
            output_tokens=reply.usage.output_tokens, cost_usd=reply.cost_usd, latency_ms=p.latency_ms,
            attempts=p.attempts, cached=p.cached, repair=repair, member=member,
            sampling_requested=dict(p.sampling_requested), sampling_applied=dict(p.sampling_applied))
        self.records.append(record)
        return record

    def add_failure(self, error: BaseException, *, member: str | None = None) -> None:
        """A call that raised after its retries: its requests still count; an unreadable 2xx reply
        makes the cost unknown."""
        attempts = getattr(error, "attempts", None)
        attempts = attempts if isinstance(attempts, int) and attempts > 0 else 1
        self.failures.append(FailedCall(error=type(error).__name__, attempts=attempts, member=member))
        if isinstance(error, ResponseParseError):
            self._unpriced = True
            if member is not None:
                self._unpriced_members.add(member)

    @property
    def requests(self) -> int:
        """HTTP requests sent (see the module docstring)."""
        return sum(0 if r.cached else r.attempts for r in self.records) + sum(f.attempts for f in self.failures)

    @property
    def retries(self) -> int:
        """Requests that repeated a failed attempt of the same call (a subset of ``requests``)."""
        return (sum(0 if r.cached else r.attempts - 1 for r in self.records)
                + sum(f.attempts - 1 for f in self.failures))

    def cost_usd(self) -> float | None:
        """Spent by these calls now: cache hits count 0; None when one price is unknown."""
        return _spent(self.records, self._unpriced)

    def cached_cost_usd(self) -> float | None:
        """What the cache hits cost when first made (None: no hit, or one price unknown)."""
        hits = [r for r in self.records if r.cached]
        if not hits or any(r.cost_usd is None for r in hits):
            return None
        return sum(r.cost_usd or 0.0 for r in hits)

    @property
    def cached_calls(self) -> int:
        return sum(1 for r in self.records if r.cached)

    def tokens(self) -> Tokens:
        return _tokens(self.records)

    def by_member(self) -> dict[str, MemberTotals] | None:
        """Each panel member's calls, requests, tokens and cost; None when no call named a member."""
        members = dict.fromkeys([r.member for r in self.records if r.member is not None]
                                + [f.member for f in self.failures if f.member is not None])
        if not members:
            return None
        out: dict[str, MemberTotals] = {}
        for name in members:
            mine = [r for r in self.records if r.member == name]
            failed = [f for f in self.failures if f.member == name]
            out[str(name)] = MemberTotals(
                model_requested=mine[0].model_requested if mine else None,
                base_url=mine[0].base_url if mine else None, calls=len(mine),
                requests=sum(0 if r.cached else r.attempts for r in mine) + sum(f.attempts for f in failed),
                cached_calls=sum(1 for r in mine if r.cached), tokens=_tokens(mine),
                cost_usd=_spent(mine, name in self._unpriced_members))
        return out

    def provenance(self, **fields: Any) -> EvaluationProvenance:
        """The call part of the provenance, plus the evaluator's own ``fields`` (its spec, mode...).

        ``model_requested`` and ``base_url`` fall back to the first call's when not given."""
        first = self.records[0] if self.records else None
        fields.setdefault("model_requested", first.model_requested if first else None)
        fields.setdefault("base_url", first.base_url if first else None)
        templates = {r.prompt_template_hash for r in self.records if r.prompt_template_hash}
        if len(templates) == 1:
            fields.setdefault("prompt_template_hash", templates.pop())
        return EvaluationProvenance(
            models_answered=sorted({r.model_answered for r in self.records if r.model_answered}),
            endpoint_kinds=sorted({r.endpoint_kind for r in self.records}),
            probability_sources=sorted({r.probability_source for r in self.records}),
            calls=list(self.records), failed_calls=list(self.failures), requests=self.requests,
            retries=self.retries, samples=self.samples_per_question, repairs=self.repairs,
            logprobs_dropped=self.logprobs_dropped, tokens=self.tokens(),
            cost_usd=self.cost_usd(), cached_calls=self.cached_calls, cached_cost_usd=self.cached_cost_usd(),
            panel=self.by_member(), **fields)


def _spent(records: list[CallRecord], unpriced: bool) -> float | None:
    if unpriced or any(r.cost_usd is None and not r.cached for r in records):
        return None
    return sum(0.0 if r.cached else (r.cost_usd or 0.0) for r in records)


def _tokens(records: list[CallRecord]) -> Tokens:
    def total(values: list[int | None]) -> int | None:
        return None if any(v is None for v in values) else sum(v or 0 for v in values)
    return Tokens(input=total([r.input_tokens for r in records]), output=total([r.output_tokens for r in records]))


__all__ = ["CallLedger"]
