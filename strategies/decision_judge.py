"""The decision judge: typed fixed-option questions answered with a probability per option.

It judges free text whose answer is still a small, predefined set by asking a decision model for
probabilities instead of parsing a generative model's prose. Three modes, picked from the task:

- questions: the task's typed questions (likelihood / choice / score), per candidate; questions
  that see the same fields share one call. The most likely option sets the score.
- criteria: each rubric criterion is the likelihood question "The response satisfies: ...", all in
  one call per candidate; passed iff every P(yes) reaches the threshold, score = weighted mean.
- comparison (several candidates, no questions): one choice question over the candidates, asked in
  the given and the reversed order, probabilities averaged per candidate id, flips recorded.

The judge never raises on model or network faults and never invents a number: failures give a
``failed`` result with the error, unreadable answers ``unparsed``, abstentions and refusals
``score=None``. What may need a human is reported as typed concerns on the result
(strategies/decision/concerns.py); ``details`` keeps the flags for people and reports.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any, Sequence

from oracle.calibration import load_calibration
from oracle.config import DecisionJudgeConfig, OracleConfig, ProvidersConfig
from oracle.errors import ConfigError
from oracle.questions import QuestionInputs
from oracle.result import CandidateResult, EvaluationResult, Status
from oracle.strategy import EvaluationContext, needs_providers, register_strategy
from oracle.task import Task, Trajectory
from oracle.ledger import CallLedger
from oracle.provenance import EvaluationProvenance
from oracle.strategies.decision.backends import (BackendKind, LogprobReadoutBackend, NativeBackend, SampledBackend,
                                          elapsed_ms)
from oracle.strategies.decision.concerns import decision_concerns
from oracle.strategies.decision.readout import UnreadableAnswer
from oracle.strategies.decision.requests import (comparison_question, comparison_state, criterion_questions,
                                          group_by_inputs, visible_state)
from oracle.strategies.decision.scoring import (AnswerVerdict, criteria_verdict, merge_orders,
                                         question_mode_score, read_answer)
from oracle.strategies.decision.validation import Mode, validate_for_decision

ESCALATION_KEYS = ("low_confidence", "refused", "order_flip", "abstained", "unparsed")
"""Boolean flags in ``EvaluationResult.details``, for people; escalation reads ``concerns``."""


class DecisionJudge:
    """Strategy ``decision_judge``; its settings are ``ctx.config.decision_judge`` of each evaluation."""

    name = "decision_judge"
    version = "1.0"

    def spec(self, config: OracleConfig) -> dict[str, Any]:
        """Name, version and the settings that differ from the defaults."""
        return {"name": self.name, "version": self.version,
                **config.decision_judge.model_dump(mode="json", exclude_defaults=True)}

    def evaluate_sync(self, ctx: EvaluationContext) -> EvaluationResult:
        """Blocking runner over ``evaluate`` (not from inside a running event loop)."""
        return asyncio.run(self.evaluate(ctx))

    @needs_providers
    async def evaluate(self, ctx: EvaluationContext) -> EvaluationResult:
        started = time.perf_counter()
        ledger = CallLedger()
        run = _Run(self, ctx, ledger)
        try:
            return await run.execute(started)
        except Exception as exc:  # the contract: faults become a failed result, never an exception
            return EvaluationResult.failure(
                "decision_judge", exc, calls=ledger.requests, cost_usd=ledger.cost_usd(),
                latency_ms=elapsed_ms(started), details={"mode": run.mode, "backend": run.backend_kind},
                provenance=run.provenance(elapsed_ms(started)))


@register_strategy("decision_judge")
def make_decision_judge() -> DecisionJudge:
    return DecisionJudge()


def _select_backend_kind(settings: DecisionJudgeConfig, providers: ProvidersConfig,
                         chat_logprobs: bool) -> BackendKind:
    if settings.backend == "native" or (settings.backend == "auto" and providers.decision is not None):
        if providers.decision is None:
            raise ConfigError("decision_judge.backend: 'native' needs providers.decision to be set")
        return "native"
    if settings.backend == "auto":
        return "logprob_readout" if chat_logprobs else "sampled"
    return settings.backend  # logprob_readout or sampled, as configured


class _Run:
    """One evaluation: resolves backend and threshold, validates, asks, and assembles the result."""

    def __init__(self, judge: DecisionJudge, ctx: EvaluationContext, ledger: CallLedger) -> None:
        self.judge, self.ctx, self.ledger = judge, ctx, ledger
        self.settings = ctx.config.decision_judge
        self.mode: Mode | None = None
        self.backend_kind: BackendKind | None = None
        self.model: str | None = None
        self.threshold_info: dict[str, Any] = {}

    def provenance(self, latency_ms: float) -> EvaluationProvenance:
        return self.ledger.provenance(
            strategy=self.judge.spec(self.ctx.config), config_hash=self.ctx.config.hash(), mode=self.mode,
            model_requested=self.model, decision_backend=self.backend_kind, latency_ms=latency_ms)

    def _resolve_threshold(self) -> float:
        info: dict[str, Any] = {"source": "default", "model": self.model}
        threshold = self.settings.pass_threshold
        if self.settings.calibration_file:
            calibration = load_calibration(self.settings.calibration_file)
            info.update(calibration_file=calibration.path, calibration_sha256=calibration.sha256)
            calibrated = calibration.threshold_for(self.model or "")
            if calibrated is None:
                info["note"] = f"the calibration file has no entry for model {self.model!r}"
            else:
                threshold = calibrated
                info["source"] = "calibration_file"
        info["pass_threshold"] = threshold
        self.threshold_info = info
        return threshold

    async def execute(self, started: float) -> EvaluationResult:
        providers = self.ctx.config.providers
        chat_logprobs = _chat_capabilities_logprobs(providers)
        self.backend_kind = _select_backend_kind(self.settings, providers, chat_logprobs)
        endpoint = providers.decision if self.backend_kind == "native" else providers.judge
        assert endpoint is not None
        self.model = endpoint.model
        # Everything that can be wrong with the input or the config is found before any call.
        task, self.mode = validate_for_decision(
            self.ctx.task, self.ctx.trajectories, label_limited=self.backend_kind != "native")
        threshold = self._resolve_threshold()
        client = self._open_client(providers)
        backend = self._backend(client)
        if self.mode == "questions":
            candidates = await asyncio.gather(*(
                self._judge_questions(backend, task, c, threshold) for c in self.ctx.trajectories))
            extra: dict[str, Any] = {}
        elif self.mode == "criteria":
            candidates = [await self._judge_criteria(backend, task, self.ctx.trajectories[0], threshold)]
            extra = {}
        else:
            candidates, extra = await self._judge_comparison(backend, task, self.ctx.trajectories)
        return self._assemble(list(candidates), extra, started)

    def _open_client(self, providers: ProvidersConfig) -> Any:
        """The pool's client for the endpoint, shared with the LLM judge when both talk to the same
        endpoint (one concurrency limit per provider); the pool's owner closes it."""
        pool = self.ctx.providers
        assert pool is not None  # needs_providers
        if self.backend_kind == "native":
            assert providers.decision is not None
            return pool.decision(providers.decision, providers.prices)
        return pool.chat(providers.judge, providers.prices)

    def _backend(self, client: Any) -> Any:
        common = dict(model=self.model or "", ledger=self.ledger, timeout_s=self.settings.timeout_s)
        if self.backend_kind == "native":
            return NativeBackend(client.decide, **common)
        if self.backend_kind == "logprob_readout":
            top = client.capabilities.max_top_logprobs or 20
            # Sampling answers where the endpoint ignores logprobs, and below the floor if configured.
            sampler = SampledBackend(client.complete, samples=self.settings.samples,
                                     temperature=self.settings.sample_temperature, **common)
            return LogprobReadoutBackend(client.complete, top_logprobs=top, sampler=sampler,
                                         fallback=sampler if self.settings.low_coverage == "sample" else None,
                                         logprobs_available=lambda: bool(client.capabilities.logprobs),
                                         coverage_floor=self.settings.coverage_floor, **common)
        return SampledBackend(client.complete, samples=self.settings.samples,
                              temperature=self.settings.sample_temperature, **common)

    # --- modes -------------------------------------------------------------------------------

    async def _judge_questions(self, backend: Any, task: Task, candidate: Trajectory,
                               threshold: float) -> CandidateResult:
        verdicts: dict[str, AnswerVerdict] = {}
        unreadable: dict[str, UnreadableAnswer] = {}
        shown: dict[str, list[str]] = {}
        by_id = {q.id: q for q in task.questions}
        for group in group_by_inputs(task.questions):
            state = visible_state(task, candidate, group[0].inputs)
            got = await backend.ask(state, group)
            for q in group:
                shown[q.id] = list(state)
                if q.id in got.answers:
                    try:
                        verdicts[q.id] = read_answer(by_id[q.id], got.answers[q.id],
                                                     coverage_floor=self.settings.coverage_floor)
                    except UnreadableAnswer as exc:
                        unreadable[q.id] = exc
                else:
                    unreadable[q.id] = got.unreadable[q.id]
        details: dict[str, Any] = {
            "questions": [verdicts[q.id].to_details() if q.id in verdicts else
                          {"question_id": q.id, "unparsed": True, "reason": unreadable[q.id].reason,
                           "raw_text": unreadable[q.id].raw_text,
                           "covered_mass": unreadable[q.id].covered_mass} for q in task.questions],
            "fields_shown": shown,
        }
        return _candidate(candidate.id, list(verdicts.values()), unreadable, details,
                          *question_mode_score(list(verdicts.values()), threshold))

    async def _judge_criteria(self, backend: Any, task: Task, candidate: Trajectory,
                              threshold: float) -> CandidateResult:
        questions = criterion_questions(task.criteria)
        state = visible_state(task, candidate, QuestionInputs())
        got = await backend.ask(state, questions)
        verdicts, unreadable = _read_all(questions, got, self.settings.coverage_floor)
        details: dict[str, Any] = {"fields_shown": list(state), "pass_threshold": threshold}
        if unreadable:
            details["unparsed_questions"] = {k: {"reason": v.reason, "raw_text": v.raw_text,
                                                 "covered_mass": v.covered_mass}
                                             for k, v in unreadable.items()}
            return _candidate(candidate.id, verdicts, unreadable, details, None, None)
        verdict = criteria_verdict(task.criteria, verdicts, threshold)
        details["criteria"] = verdict.criteria
        return _candidate(candidate.id, verdicts, {}, details, verdict.score, verdict.passed)

    async def _judge_comparison(self, backend: Any, task: Task, candidates: Sequence[Trajectory]
                                ) -> tuple[list[CandidateResult], dict[str, Any]]:
        forward_q = comparison_question(task, candidates)
        backward_q = comparison_question(task, list(reversed(candidates)))
        state = comparison_state(task)
        got_f, got_b = await asyncio.gather(backend.ask(state, [forward_q]), backend.ask(state, [backward_q]))
        fwd, bad_f = _read_all([forward_q], got_f, self.settings.coverage_floor)
        bwd, bad_b = _read_all([backward_q], got_b, self.settings.coverage_floor)
        extra: dict[str, Any] = {"orders": [forward_q.labels(), backward_q.labels()]}
        if bad_f or bad_b:
            extra["unparsed_orders"] = {
                order: {"reason": v.reason, "raw_text": v.raw_text, "covered_mass": v.covered_mass}
                for order, bad in (("forward", bad_f), ("backward", bad_b)) for v in bad.values()}
            return [CandidateResult(id=c.id, status=Status.unparsed) for c in candidates], extra
        f, b = fwd[0], bwd[0]
        if f.refused or b.refused:
            extra["refusals"] = [v.refusal_reason for v in (f, b) if v.refused]
            return [CandidateResult(id=c.id, status=Status.abstained,
                                    details={"refused": True}) for c in candidates], extra
        merged = merge_orders(f, b)
        low = merged.order_flip or f.low_confidence or b.low_confidence
        extra.update(probabilities=merged.probabilities, per_order=merged.per_order,
                     winners_by_order=merged.winners, order_flip=merged.order_flip,
                     confidence=merged.confidence, comparison_ranking=merged.ranking,
                     comparison_best=merged.best, probability_source=f.probability_source,
                     covered_mass=[f.covered_mass, b.covered_mass])
        results = [CandidateResult(
            id=c.id, score=merged.probabilities[c.id], passed=None, status=Status.ok,
            details={"p_best": merged.probabilities[c.id],
                     "p_best_by_order": [f.probabilities[c.id], b.probabilities[c.id]],
                     "order_flip": merged.order_flip, "low_confidence": low,
                     "confidence": merged.confidence}) for c in candidates]
        return results, extra

    # --- assembly ----------------------------------------------------------------------------

    def _assemble(self, candidates: list[CandidateResult], extra: dict[str, Any],
                  started: float) -> EvaluationResult:
        flags = {key: any(bool(c.details.get(key)) for c in candidates) for key in ESCALATION_KEYS}
        flags["order_flip"] = flags["order_flip"] or bool(extra.get("order_flip"))
        flags["abstained"] = flags["abstained"] or any(c.status == Status.abstained for c in candidates)
        flags["unparsed"] = flags["unparsed"] or any(c.status == Status.unparsed for c in candidates)
        flags["refused"] = flags["refused"] or bool(extra.get("refusals"))
        scored = [c for c in candidates if c.score is not None]
        order = {c.id: i for i, c in enumerate(candidates)}
        ranking = [c.id for c in sorted(scored, key=lambda c: (-(c.score or 0.0), order[c.id]))]
        top = max((c.score for c in scored), default=None)
        best = [c.id for c in scored if top is not None and c.score is not None and c.score >= top - 1e-12]
        if any(c.status == Status.ok for c in candidates):
            status = Status.ok
        elif any(c.status == Status.unparsed for c in candidates):
            status = Status.unparsed
        else:
            status = Status.abstained
        latency = elapsed_ms(started)
        details: dict[str, Any] = {
            "mode": self.mode, "backend": self.backend_kind, "decision_model": self.model,
            "pass_threshold": self.threshold_info.get("pass_threshold"),
            "threshold": self.threshold_info, **flags,
            "low_confidence_candidates": [c.id for c in candidates if c.details.get("low_confidence")],
            **extra,
        }
        return EvaluationResult(
            evaluator="decision_judge", status=status, best=best, ranking=ranking,
            candidates=candidates, calls=self.ledger.requests, cost_usd=self.ledger.cost_usd(),
            latency_ms=latency, explanation=_explain(self.mode, candidates, self.threshold_info),
            details=details, concerns=decision_concerns(candidates, extra, flags),
            provenance=self.provenance(latency))


def _chat_capabilities_logprobs(providers: ProvidersConfig) -> bool:
    """Whether the chat endpoint offers logprobs, read from its wire format (no network)."""
    from oracle.providers.clients import chat_format

    return chat_format(providers.judge).capabilities().logprobs


def _read_all(questions: Sequence[Any], got: Any, coverage_floor: float
              ) -> tuple[list[AnswerVerdict], dict[str, UnreadableAnswer]]:
    verdicts: list[AnswerVerdict] = []
    unreadable: dict[str, UnreadableAnswer] = dict(got.unreadable)
    for q in questions:
        if q.id in got.answers:
            try:
                verdicts.append(read_answer(q, got.answers[q.id], coverage_floor=coverage_floor))
            except UnreadableAnswer as exc:
                unreadable[q.id] = exc
    return verdicts, unreadable


def _candidate(cid: str, verdicts: list[AnswerVerdict], unreadable: dict[str, UnreadableAnswer],
               details: dict[str, Any], score: float | None, passed: bool | None) -> CandidateResult:
    """Candidate status and flags: unparsed beats abstained; a refusal or abstention is not a score."""
    refused = [v.question_id for v in verdicts if v.refused]
    abstained = [v.question_id for v in verdicts if v.abstained]
    low = [v.question_id for v in verdicts if v.low_confidence]
    details.update(refused=bool(refused), refused_questions=refused,
                   refusal_reasons={v.question_id: v.refusal_reason for v in verdicts if v.refused},
                   abstained=bool(abstained), abstained_questions=abstained,
                   low_confidence=bool(low), low_confidence_questions=low,
                   unparsed=bool(unreadable))
    if unreadable:
        return CandidateResult(id=cid, status=Status.unparsed, details=details)
    if score is None:
        return CandidateResult(id=cid, status=Status.abstained, details=details)
    return CandidateResult(id=cid, score=score, passed=passed, status=Status.ok, details=details)


def _explain(mode: Mode | None, candidates: list[CandidateResult], threshold: dict[str, Any]) -> str:
    parts = []
    for c in candidates:
        if c.score is None:
            parts.append(f"{c.id}: {c.status.value}")
        else:
            verdict = "" if c.passed is None else (" passed" if c.passed else " failed")
            parts.append(f"{c.id}: score {c.score:.3f}{verdict}")
    return (f"decision judge ({mode}, threshold {threshold.get('pass_threshold')} from "
            f"{threshold.get('source')}): " + "; ".join(parts))


__all__ = ["DecisionJudge", "make_decision_judge", "ESCALATION_KEYS"]
