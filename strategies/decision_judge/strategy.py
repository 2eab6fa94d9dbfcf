"""The decision judge: typed fixed-option questions answered with a probability per option.

It judges free text whose answer is still a small, predefined set by asking a decision model for
probabilities instead of parsing a generative model's prose. Four modes, picked from the task
(strategies/decision_judge/validation.py):

- questions: the task's typed questions (likelihood / choice / score), per candidate; questions
  that see the same fields (and ask the same model) share one call. The most likely option sets
  the score.
- criteria: each rubric criterion is the likelihood question "The response satisfies: ...", per
  candidate, however many candidates there are; passed iff every P(yes) reaches the threshold,
  score = weighted mean. On a native endpoint a candidate's criteria travel in one call; a logprob
  readout asks one call per candidate and criterion.
- comparison, only when the task asks for it: a choice question whose options are exactly the
  trajectory ids, asked in the given and the reversed order, P(best) averaged per id, flips recorded.
- claim_check (task option): two opposing questions about one claim (strategies/decision_judge/claims.py).

With a pass rule, ``best`` is the highest-scoring passing candidates and empty when none passes
(strategies/decision_judge/results.py).

The judge never raises on model or network faults and never invents a number: failures give a
``failed`` result with the error, unreadable answers ``unparsed``, abstentions and refusals
``score=None``. A call that fails on one candidate's input (strategies/_judging/faults.py) fails that
candidate alone (``status=failed`` with the error, a ``candidate_unjudged`` concern) in the
questions and criteria modes; a comparison carries every candidate in one question, so its failure
is the evaluation's. What may need a human is reported as typed concerns on the result
(strategies/decision_judge/concerns.py); ``details`` keeps the flags for people and reports.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any, Awaitable, Callable, Coroutine, Sequence

from oracle.config.calibration import load_calibration
from oracle.config.model import DecisionJudgeConfig, OracleConfig, ProviderSettings, ProvidersConfig
from oracle.errors import ConfigError
from oracle.tasks.questions import Question, QuestionInputs, is_comparison
from oracle.results.result import CandidateResult, EvaluationResult, Status
from oracle.strategies.protocol import EvaluationContext, needs_providers
from oracle.tasks.task import Task, Trajectory
from oracle.results.ledger import CallLedger
from oracle.results.provenance import EvaluationProvenance
from oracle.strategies.decision_judge.backends import BackendKind, CallTag, elapsed_ms
from oracle.strategies.decision_judge.claims import (CHALLENGE_ID, CLAIM_QUESTIONS, SUPPORT_ID, claim_state,
                                                     claim_verdict)
from oracle.strategies.decision_judge.concerns import decision_concerns, none_passed_concern, panel_concern
from oracle.strategies.decision_judge.endpoints import build_backend
from oracle.strategies.decision_judge.panel import (MemberPlan, PanelBackend, PanelMemberBackend, panel_details,
                                                    plan_members)
from oracle.strategies.decision_judge.readout import UnreadableAnswer
from oracle.strategies.decision_judge.requests import (comparison_question, comparison_state, criterion_questions,
                                                 group_by_inputs, visible_state)
from oracle.strategies.decision_judge.results import candidate_result, explain, rank, read_all, unreadable_details
from oracle.strategies.decision_judge.scoring import AnswerVerdict, criteria_verdict, merge_orders, question_mode_score
from oracle.strategies.decision_judge.validation import Mode, validate_for_decision
from oracle.strategies._judging.faults import contain, error_info, raise_if_nothing_judged, unjudged_concern
from oracle.strategies._judging.gather import gather_or_cancel

ESCALATION_KEYS = ("low_confidence", "refused", "order_flip", "abstained", "unparsed")
"""Boolean flags in ``EvaluationResult.details``, for people; escalation reads ``concerns``."""


class DecisionJudge:
    """Evaluator ``decision_judge``; its settings are ``ctx.config.decision_judge`` of each evaluation."""

    name = "decision_judge"
    version = "1.1"

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
        except Exception as exc:  # noqa: BLE001 - the contract: faults become a failed result, never an exception
            return EvaluationResult.failure(
                "decision_judge", exc, calls=ledger.requests, cost_usd=ledger.cost_usd(),
                latency_ms=elapsed_ms(started), details={"mode": run.mode, "backend": run.backend_kind},
                provenance=run.provenance(elapsed_ms(started)))


def _select_backend_kind(settings: DecisionJudgeConfig, providers: ProvidersConfig,
                         chat_logprobs: bool) -> BackendKind:
    if settings.backend == "native" or (settings.backend == "auto" and providers.decision is not None):
        if providers.decision is None:
            raise ConfigError("decision_judge.backend: 'native' needs providers.decision to be set")
        return "native"
    if settings.backend == "auto":
        return "logprob_readout" if chat_logprobs else "sampled"
    return settings.backend  # logprob_readout or sampled, as configured


def with_review_cut(questions: Sequence[Question], cut: float) -> list[Question]:
    """Yes/no questions without their own min_confidence get the calibrated one."""
    def yes_no(q: Question) -> bool:
        return q.type == "likelihood" or (q.type == "choice" and set(q.labels()) == {"yes", "no"})

    return [q.model_copy(update={"min_confidence": cut}) if q.min_confidence is None and yes_no(q) else q
            for q in questions]


class _Run:
    """One evaluation: resolves backend and threshold, validates, asks, and assembles the result."""

    def __init__(self, judge: DecisionJudge, ctx: EvaluationContext, ledger: CallLedger) -> None:
        self.judge, self.ctx, self.ledger = judge, ctx, ledger
        self.settings = ctx.config.decision_judge
        self.mode: Mode | None = None
        self.backend_kind: BackendKind | None = None
        self.model: str | None = None
        self.threshold_info: dict[str, Any] = {}
        self._backends: dict[str | None, Any] = {}
        self.model_overrides: dict[str, dict[str, Any]] = {}
        """Per question with its own ``model``: the model and whether it was applied (native only)."""
        self.extra_concerns: list[Any] = []
        self.review_cuts: dict[str, float] = {}
        """Calibrated min_confidence per question kind (criteria, likelihood), from the calibration file."""
        self.members: list[MemberPlan] = []
        """``decision_judge.panel``, resolved (empty: one judge)."""
        self.tag = CallTag(run_repeat=int(ctx.extra.get("repeat", 0) or 0))

    def provenance(self, latency_ms: float) -> EvaluationProvenance:
        return self.ledger.provenance(
            evaluator=self.judge.spec(self.ctx.config), config_hash=self.ctx.config.hash(), mode=self.mode,
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
            # A version 2 file's fitted review cut per question kind: the default min_confidence of
            # yes/no questions (criteria, likelihood) that set none themselves.
            cuts = {kind: calibration.min_confidence_for(self.model or "", kind) for kind in ("criteria", "likelihood")}
            self.review_cuts = {k: v for k, v in cuts.items() if v is not None}
            if self.review_cuts:
                info["min_confidence"] = dict(self.review_cuts)
        info["pass_threshold"] = threshold
        self.threshold_info = info
        return threshold

    def _offers_logprobs(self, endpoint: Any) -> bool:
        """Whether a chat endpoint is read by logprobs: its wire format says so, and its client (in
        the pool) has not learned otherwise; one that turned out to ignore logprobs is sampled from
        the start, and the provenance says so."""
        providers = self.ctx.config.providers
        if not _chat_capabilities_logprobs(endpoint):
            return False
        if self.ctx.providers is None:
            return True
        return bool(self.ctx.providers.chat(endpoint, providers.prices).capabilities.logprobs)

    def _choose_backend(self) -> None:
        providers = self.ctx.config.providers
        if self.settings.panel:
            self.members = plan_members(self.settings, providers, self._offers_logprobs)
            self.backend_kind = "panel"
            self.model = "panel:" + "+".join(m.label for m in self.members)
            return
        chat_logprobs = (_chat_capabilities_logprobs(providers.judge) if providers.decision is not None
                         else self._offers_logprobs(providers.judge))
        self.backend_kind = _select_backend_kind(self.settings, providers, chat_logprobs)
        endpoint = providers.decision if self.backend_kind == "native" else providers.judge
        assert endpoint is not None
        self.model = endpoint.model

    async def execute(self, started: float) -> EvaluationResult:
        self._choose_backend()
        # A route that chose a claim check (the prompt asks to verify a claim against the task's
        # context or reference) runs one, as if the task had set claim_check itself.
        task = self.ctx.task
        route = self.ctx.route
        if route is not None and route.claim_check and not task.claim_check:
            task = task.model_copy(update={"claim_check": True})
        # Everything that can be wrong with the input or the config is found before any call.
        native = all(m.kind == "native" for m in self.members) if self.members else self.backend_kind == "native"
        task, self.mode = validate_for_decision(task, self.ctx.trajectories, label_limited=not native)
        threshold = self._resolve_threshold()
        if "likelihood" in self.review_cuts and task.questions:
            cut = with_review_cut(task.questions, self.review_cuts["likelihood"])
            task = task.model_copy(update={"questions": cut})
        self._note_model_overrides(task.questions)
        cands = self.ctx.trajectories
        extra: dict[str, Any] = {}
        if self.mode == "questions":
            results = await self._per_candidate(cands, lambda c: self._judge_questions(task, c, threshold))
        elif self.mode == "criteria":
            results = await self._per_candidate(cands, lambda c: self._judge_criteria(task, c, threshold))
        elif self.mode == "claim_check":
            results = [await self._judge_claim(task, cands[0])]
        else:
            results, extra = await self._judge_comparison(task, cands)
        if self.model_overrides:
            extra["model_overrides"] = self.model_overrides
        if self.members:
            extra["panel_members"] = {m.label: m.describe() for m in self.members}
            orders = extra.get("panel") or {}
            extra["panel_disagreement"] = any(
                bool((c.details.get("panel") or {}).get("disagreement")) for c in results) or any(
                bool(p.get("disagreement")) for p in orders.values())
        return self._assemble(list(results), extra, started)

    async def _per_candidate(self, cands: Sequence[Trajectory],
                             judge: Callable[[Trajectory], Awaitable[CandidateResult]]) -> list[CandidateResult]:
        """Every candidate judged in its own calls; a call failing on one candidate's input fails
        that candidate alone (strategies/_judging/faults.py), any other fault cancels the rest."""
        errors: list[BaseException] = []

        def one(c: Trajectory) -> Coroutine[Any, Any, CandidateResult]:
            return contain(lambda: judge(c), lambda exc: CandidateResult(
                id=c.id, status=Status.failed, details={"error": error_info(exc)}), errors)

        results = list(await gather_or_cancel(*(one(c) for c in cands)))
        raise_if_nothing_judged(sum(1 for r in results if r.status != Status.failed), errors)
        return results

    # --- clients and backends -----------------------------------------------------------------

    def _note_model_overrides(self, questions: Sequence[Question]) -> None:
        """A question's own model goes to the native decision endpoint only; elsewhere it is recorded
        as not applied (one provider's model name is never sent to another). A panel asks each
        member's own model."""
        native = self.backend_kind == "native"
        for q in questions:
            if q.model is not None:
                self.model_overrides[q.id] = {"model": q.model, "applied": native, **(
                    {} if native else {"panel": True} if self.members else {"sent_model": self.model})}

    def _backend(self, model: str | None = None) -> Any:
        """The backend for the endpoint's model, or (native only) for a question's own model."""
        key = model if self.backend_kind == "native" and model != self.model else None
        if key not in self._backends:
            self._backends[key] = self._make_backend(key)
        return self._backends[key]

    def _make_backend(self, model: str | None) -> Any:
        pool = self.ctx.providers
        assert pool is not None  # needs_providers
        providers = self.ctx.config.providers
        common: dict[str, Any] = {"pool": pool, "prices": providers.prices, "judge": self.settings,
                                  "ledger": self.ledger}
        if self.members:
            return PanelBackend(
                [PanelMemberBackend(m, build_backend(m.kind, m.settings, **common, temperature=m.temperature,
                                                     tag=CallTag(member=m.label, run_repeat=self.tag.run_repeat)))
                 for m in self.members],
                how=self.settings.panel_aggregate, disagreement=self.settings.panel_disagreement,
                coverage_floor=self.settings.coverage_floor)
        assert self.backend_kind in ("native", "logprob_readout", "sampled")
        if self.backend_kind == "native":
            assert providers.decision is not None
            settings = providers.decision if model is None else providers.decision.model_copy(update={"model": model})
            return build_backend("native", settings, **common, tag=self.tag)
        return build_backend(self.backend_kind, providers.judge, **common, tag=self.tag)

    def _panel(self, questions: dict[str, dict[str, Any]]) -> dict[str, Any]:
        return panel_details(questions, [m.label for m in self.members], self.settings.panel_aggregate)

    # --- modes -------------------------------------------------------------------------------

    async def _judge_questions(self, task: Task, candidate: Trajectory, threshold: float) -> CandidateResult:
        verdicts: dict[str, AnswerVerdict] = {}
        unreadable: dict[str, UnreadableAnswer] = {}
        shown: dict[str, list[str]] = {}
        panel: dict[str, dict[str, Any]] = {}
        for group in group_by_inputs(task.questions, default_model=self.model,
                                     by_model=self.backend_kind == "native"):
            state = visible_state(task, candidate, group[0].inputs)
            got = await self._backend(group[0].model).ask(state, group)
            read, bad = read_all(group, got, self.settings.coverage_floor)
            verdicts.update((v.question_id, v) for v in read)
            unreadable.update(bad)
            panel.update(got.panel)
            shown.update((q.id, list(state)) for q in group)
        details: dict[str, Any] = {
            "questions": [verdicts[q.id].to_details() if q.id in verdicts else
                          {"question_id": q.id, "unparsed": True, **unreadable_details(unreadable)[q.id]}
                          for q in task.questions],
            "fields_shown": shown,
        }
        if panel:
            details["panel"] = self._panel({q.id: panel[q.id] for q in task.questions if q.id in panel})
        ordered = [verdicts[q.id] for q in task.questions if q.id in verdicts]
        return candidate_result(candidate.id, ordered, unreadable, details,
                                *question_mode_score(ordered, threshold))

    async def _judge_criteria(self, task: Task, candidate: Trajectory, threshold: float) -> CandidateResult:
        questions = criterion_questions(task.criteria)
        if "criteria" in self.review_cuts:
            questions = with_review_cut(questions, self.review_cuts["criteria"])
        state = visible_state(task, candidate, QuestionInputs())
        got = await self._backend().ask(state, questions)
        verdicts, unreadable = read_all(questions, got, self.settings.coverage_floor)
        details: dict[str, Any] = {"fields_shown": list(state), "pass_threshold": threshold}
        if got.panel:
            details["panel"] = self._panel(got.panel)
        if unreadable:
            details["unparsed_questions"] = unreadable_details(unreadable)
            return candidate_result(candidate.id, verdicts, unreadable, details, None, None)
        verdict = criteria_verdict(task.criteria, verdicts, threshold)
        details["criteria"] = verdict.criteria
        return candidate_result(candidate.id, verdicts, {}, details, verdict.score, verdict.passed)

    async def _judge_claim(self, task: Task, candidate: Trajectory) -> CandidateResult:
        """Both questions in one call on a native endpoint; one readout call each otherwise."""
        state = claim_state(task, candidate)
        got = await self._backend().ask(state, list(CLAIM_QUESTIONS))
        verdicts, unreadable = read_all(CLAIM_QUESTIONS, got, self.settings.coverage_floor)
        details: dict[str, Any] = {"fields_shown": list(state),
                                   "questions": [v.to_details() for v in verdicts]}
        if got.panel:
            details["panel"] = self._panel(got.panel)
        if unreadable:
            details["unparsed_questions"] = unreadable_details(unreadable)
            return candidate_result(candidate.id, verdicts, unreadable, details, None, None)
        by_id = {v.question_id: v for v in verdicts}
        if by_id[SUPPORT_ID].refused or by_id[CHALLENGE_ID].refused:
            return candidate_result(candidate.id, verdicts, {}, details, None, None)
        thresholds = self.settings.claim_check
        verdict = claim_verdict(by_id[SUPPORT_ID].probabilities["yes"], by_id[CHALLENGE_ID].probabilities["yes"],
                                support_threshold=thresholds.support_threshold,
                                challenge_threshold=thresholds.challenge_threshold)
        details["claim_check"] = verdict.to_details()
        concern = verdict.concern(candidate.id)
        if concern is not None:
            self.extra_concerns.append(concern)
        return candidate_result(candidate.id, verdicts, {}, details, verdict.score, verdict.passed)

    async def _judge_comparison(self, task: Task, candidates: Sequence[Trajectory]
                                ) -> tuple[list[CandidateResult], dict[str, Any]]:
        ids = [c.id for c in candidates]
        asked = next(q for q in task.questions if is_comparison(q, ids))
        forward_q = comparison_question(asked, candidates)
        backward_q = comparison_question(asked, list(reversed(candidates)))
        state = comparison_state(task, asked)
        backend = self._backend(asked.model)
        got_f, got_b = await asyncio.gather(backend.ask(state, [forward_q]), backend.ask(state, [backward_q]))
        fwd, bad_f = read_all([forward_q], got_f, self.settings.coverage_floor)
        bwd, bad_b = read_all([backward_q], got_b, self.settings.coverage_floor)
        extra: dict[str, Any] = {"comparison_question": asked.id,
                                 "orders": [forward_q.labels(), backward_q.labels()]}
        if got_f.panel or got_b.panel:
            # One question about every candidate: the members' split is the evaluation's, per order.
            extra["panel"] = {"forward": self._panel(got_f.panel), "backward": self._panel(got_b.panel)}
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
        flags["unparsed"] = flags["unparsed"] or any(c.status == Status.unparsed for c in candidates)
        flags["refused"] = flags["refused"] or bool(extra.get("refusals"))
        # An undecided claim check is its own concern (both probabilities), not a generic abstention.
        flags["abstained"] = flags["abstained"] or any(
            c.status == Status.abstained for c in candidates if c.id not in
            {cid for concern in self.extra_concerns for cid in concern.candidates})
        ranking, best, none_passed = rank(candidates)
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
            "threshold": self.threshold_info, **flags, "none_passed": none_passed,
            "low_confidence_candidates": [c.id for c in candidates if c.details.get("low_confidence")],
            "failed_candidates": [c.id for c in candidates if c.status == Status.failed],
            **extra,
        }
        return EvaluationResult(
            evaluator="decision_judge", status=status, best=best, ranking=ranking,
            candidates=candidates, calls=self.ledger.requests, cost_usd=self.ledger.cost_usd(),
            latency_ms=latency, explanation=explain(self.mode, candidates, self.threshold_info, none_passed),
            details=details, concerns=self._concerns(candidates, extra, flags),
            provenance=self.provenance(latency))

    def _concerns(self, candidates: list[CandidateResult], extra: dict[str, Any],
                  flags: dict[str, bool]) -> list[Any]:
        none_passed = none_passed_concern(candidates, self.mode, self.threshold_info.get("pass_threshold", 0.5))
        unjudged = unjudged_concern({c.id: c.details["error"] for c in candidates
                                     if c.status == Status.failed and isinstance(c.details.get("error"), dict)})
        panel = panel_concern(candidates, extra, self.settings.panel_disagreement)
        return [*decision_concerns(candidates, extra, flags), *self.extra_concerns, *([panel] if panel else []),
                *([none_passed] if none_passed is not None else []), *([unjudged] if unjudged is not None else [])]


def _chat_capabilities_logprobs(endpoint: ProviderSettings) -> bool:
    """Whether a chat endpoint offers logprobs, read from its wire format (no network)."""
    from oracle.providers.clients import chat_format

    return chat_format(endpoint).capabilities().logprobs


__all__ = ["DecisionJudge", "ESCALATION_KEYS"]
