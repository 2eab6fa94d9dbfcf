"""A decision judge panel: every question asked of each member through its own backend, the
answers combined per question (strategies/decision_judge/aggregation.py).

Why each member keeps its own backend: members are different endpoints. A member on a decision
endpoint (``decisions``/``systemone``) is asked natively, every question about a state in one
call; an OpenAI-compatible (or Anthropic) member is read by logprobs or sampled, exactly as the
judge's own chat endpoint is. Every call is written into the one ledger under the member's label,
so provenance shows each member's calls, tokens and cost.

Why a failing member does not fail the panel: a member whose call fails (after its retries, or
past the judge's timeout) is left out of the questions that call carried and reported; the
members that answered decide. Only when every member's call failed does the failure propagate,
and the candidate (or the evaluation) fails exactly as with one judge.

Everything that can be wrong with a member's settings for this judge is found before any call,
and the error names ``decision_judge.panel.N``.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any, Callable, Sequence

from oracle.config.model import DecisionJudgeConfig, ProviderSettings, ProvidersConfig, member_labels
from oracle.errors import ConfigError, ProviderError
from oracle.tasks.questions import Question
from oracle.strategies.decision_judge.aggregation import aggregate, member_vote
from oracle.strategies.decision_judge.backends import BackendAnswers, BackendKind
from oracle.strategies._judging.faults import error_info

NATIVE_KINDS = ("decisions", "systemone")


@dataclass(frozen=True)
class MemberPlan:
    """One member, resolved: its label, endpoint, backend and sampling temperature."""

    index: int
    label: str
    settings: ProviderSettings
    kind: BackendKind
    temperature: float | None
    """Its sampling temperature (None: ``decision_judge.sample_temperature``)."""

    def describe(self) -> dict[str, Any]:
        return {"backend": self.kind, "model": self.settings.model, "base_url": self.settings.base_url,
                "endpoint": self.settings.kind}


def plan_members(judge: DecisionJudgeConfig, providers: ProvidersConfig,
                 offers_logprobs: Callable[[ProviderSettings], bool]) -> list[MemberPlan]:
    """Each member's endpoint and backend; a ``ConfigError`` naming ``decision_judge.panel.N``
    for a member this judge cannot ask. ``offers_logprobs``: whether a chat endpoint reads by
    logprobs (its wire format, narrowed by what its client has learned)."""
    labels = member_labels(judge.panel, providers)
    plans = []
    for i, (member, label) in enumerate(zip(judge.panel, labels)):
        where = f"decision_judge.panel.{i}"
        try:
            settings = member.settings(providers)
        except ValueError as exc:  # validated at config load; a config built by model_construct is not
            raise ConfigError(f"{where}: {exc}") from None
        if settings.kind in NATIVE_KINDS:
            if judge.backend in ("logprob_readout", "sampled"):
                raise ConfigError(f"{where}: a {settings.kind} endpoint answers natively, but "
                                  f"decision_judge.backend={judge.backend!r} reads a chat endpoint")
            if member.temperature is not None:
                raise ConfigError(f"{where}.temperature: a {settings.kind} endpoint takes no temperature")
            kind: BackendKind = "native"
        else:
            if judge.backend == "native":
                raise ConfigError(f"{where}: decision_judge.backend='native' needs a decisions or systemone "
                                  f"endpoint; this member's is {settings.kind!r}")
            if member.temperature == 0:
                raise ConfigError(f"{where}.temperature: 0 would make every sample the same answer; "
                                  "sampling needs a temperature above 0")
            if judge.backend == "auto":
                kind = "logprob_readout" if offers_logprobs(settings) else "sampled"
            else:
                kind = judge.backend
        plans.append(MemberPlan(i, label, settings, kind, member.temperature))
    return plans


@dataclass(frozen=True)
class PanelMemberBackend:
    plan: MemberPlan
    backend: Any
    """The member's own NativeBackend, LogprobReadoutBackend or SampledBackend."""


class PanelBackend:
    """Asks every member, then combines their answers per question; same ``ask`` as one backend."""

    kind: BackendKind = "panel"

    def __init__(self, members: Sequence[PanelMemberBackend], *, how: Any, disagreement: float,
                 coverage_floor: float) -> None:
        self.members = list(members)
        self._how, self._disagreement, self._coverage_floor = how, disagreement, coverage_floor

    async def ask(self, state: dict[str, Any] | str, questions: Sequence[Question]) -> BackendAnswers:
        got = await asyncio.gather(*(m.backend.ask(state, questions) for m in self.members),
                                   return_exceptions=True)
        for result in got:
            if isinstance(result, BaseException) and not isinstance(result, ProviderError):
                raise result   # ours, not the member's endpoint: never hidden behind the others
        failed = [r for r in got if isinstance(r, BaseException)]
        if len(failed) == len(got):
            raise failed[0]    # nobody answered: fails as one judge's failed call does
        out = BackendAnswers()
        for q in questions:
            votes = []
            for member, result in zip(self.members, got):
                label = member.plan.label
                if isinstance(result, BaseException):
                    votes.append(member_vote(q, label, None, None, coverage_floor=self._coverage_floor,
                                             error=error_info(result)))
                else:
                    votes.append(member_vote(q, label, result.answers.get(q.id), result.unreadable.get(q.id),
                                             coverage_floor=self._coverage_floor))
            combined = aggregate(q, votes, how=self._how, disagreement=self._disagreement)
            out.panel[q.id] = combined.details
            if combined.answer is not None:
                out.answers[q.id] = combined.answer
            elif combined.unreadable is not None:
                out.unreadable[q.id] = combined.unreadable
        return out


def panel_details(questions: dict[str, dict[str, Any]], members: Sequence[str], how: str) -> dict[str, Any]:
    """One candidate's ``details["panel"]``: per question what each member said, and where they split."""
    spreads = [q["spread"] for q in questions.values() if q.get("spread") is not None]
    return {"members": list(members), "aggregate": how, "questions": questions,
            "disagreement": any(q["disagreement"] for q in questions.values()),
            "disagreed_questions": [qid for qid, q in questions.items() if q["disagreement"]],
            "max_spread": max(spreads) if spreads else None,
            "left_out": {m: [qid for qid, q in questions.items() if m in q["left_out"]] for m in members
                         if any(m in q["left_out"] for q in questions.values())}}


__all__ = ["MemberPlan", "PanelBackend", "PanelMemberBackend", "panel_details", "plan_members"]
