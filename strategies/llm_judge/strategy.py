"""The LLM judge: rubric scoring for one candidate, a pairwise tournament for several.

Modes (``llm_judge.mode``):

- ``auto`` (default): one candidate is scored pointwise on the rubric. Several are a cascade:
  every candidate is scored pointwise on the weighted criteria first (n calls); only the candidates
  within ``pairwise_margin`` of the top score go on to a pairwise tournament in both orders, and
  that tournament reorders only inside this close group. A clear winner costs no pairwise call; a
  field of near-equals gets the order-robust comparison where it matters.
- ``pointwise``: every candidate scored on the rubric; ranking by score.
- ``pairwise``: the tournament; needs at least two candidates (one is bad input).

What may need a human is reported as typed concerns on the result (strategies/llm_judge/concerns.py);
``details`` keeps the same facts under ``ESCALATION_KEYS`` for people and reports. Faults never raise
out of ``evaluate``: a provider error yields ``status=failed`` with the calls spent so far, an
unreadable reply yields ``unparsed`` with the raw text kept, never a midpoint. A call that fails on
one candidate's input (strategies/_judging/faults.py: a 400 for an answer past the context, ...) fails
that candidate alone (pointwise: ``status=failed`` with the error) or that pair alone (pairwise: the
pair is recorded as ``failed``, the other pairs still count); the evaluation fails only when nothing
could be judged.
"""

from __future__ import annotations

import asyncio
import dataclasses
import time
from typing import Any

from oracle.config.model import LLMJudgeConfig, OracleConfig, member_labels
from oracle.results.result import CandidateResult, EvaluationResult, Status
from oracle.strategies.protocol import EvaluationContext, needs_providers
from oracle.tasks.task import Task, Trajectory

from oracle.results.ledger import CallLedger
from oracle.results.provenance import EvaluationProvenance
from oracle.strategies._judging.faults import contain, error_info, raise_if_nothing_judged
from oracle.strategies._judging.gather import gather_or_cancel
from oracle.strategies._judging.panel import Panel
from oracle.strategies._judging.placement import seeded_order
from oracle.strategies.llm_judge.calls import ChatCompleter, Grader
from oracle.strategies.llm_judge.combine import combine_scores
from oracle.strategies.llm_judge.commit_first import commit
from oracle.strategies.llm_judge.concerns import judge_concerns
from oracle.strategies.llm_judge.pairwise import PairwiseRun, run_pairwise
from oracle.strategies.llm_judge.panel_report import pairwise_repeat_spread, panel_report
from oracle.strategies.llm_judge.pointwise import score_candidate
from oracle.strategies.llm_judge.prompts import commit_template_hashes, prompt_hash, rubric, task_template_hashes
from oracle.strategies.llm_judge.ranking import (all_pairs_judgements, judgement_budget, normalized_copeland,
                                position_bias)

ESCALATION_KEYS = ("order_inconsistent_pairs", "cycles", "unparsed_pairs", "unparsed_candidates",
                   "failed_pairs", "failed_candidates", "tied_best", "position_bias", "repeat_spread")
"""Keys always present in ``details`` (empty list / None when nothing to report)."""


class InvalidJudgeInput(ValueError):
    """The task/candidates cannot be judged as configured (reported before any model call)."""


def hardened(ctx: EvaluationContext) -> EvaluationContext:
    """A hard route spends more: ``hard_repeats`` samples (at ``hard_temperature`` when the
    configured temperature is 0) and, for several candidates in auto mode, the full pairwise
    tournament in both orders. The settings actually used are in the context's config, so
    ``spec`` and ``config_hash`` in the provenance say what ran."""
    if ctx.route is None or not ctx.route.hard:
        return ctx
    cfg = ctx.config.llm_judge
    update: dict[str, Any] = {"repeats": max(cfg.repeats, cfg.hard_repeats)}
    if cfg.temperature == 0:
        update["temperature"] = cfg.hard_temperature
    if cfg.mode == "auto" and len(ctx.trajectories) > 1:
        update["mode"] = "pairwise"
    config = ctx.config.model_copy(update={"llm_judge": cfg.model_copy(update=update)})
    return dataclasses.replace(ctx, config=type(ctx.config).model_validate(config.model_dump(mode="python")))


class LLMJudge:
    """Evaluator ``llm_judge``; its settings are ``ctx.config.llm_judge`` of each evaluation."""

    name = "llm_judge"
    version = "1.0"

    def __init__(self, *, client: ChatCompleter | None = None) -> None:
        self._client = client
        """An injected client is used as is and left open; otherwise ``ctx.providers`` supplies one."""

    def spec(self, config: OracleConfig) -> dict[str, Any]:
        """Name, version and the settings that differ from the defaults."""
        return {"name": self.name, "version": self.version,
                **config.llm_judge.model_dump(mode="json", exclude_defaults=True)}

    def evaluate_sync(self, ctx: EvaluationContext) -> EvaluationResult:
        """Blocking runner over ``evaluate`` (not from inside a running event loop)."""
        return asyncio.run(self.evaluate(ctx))

    def resolve_mode(self, trajectories: tuple[Trajectory, ...] | list[Trajectory],
                     settings: LLMJudgeConfig) -> str:
        if not trajectories:
            raise InvalidJudgeInput("trajectories: at least one candidate is needed")
        mode = settings.mode
        if mode == "pairwise" and len(trajectories) < 2:
            raise InvalidJudgeInput("trajectories: llm_judge.mode 'pairwise' needs at least two candidates")
        if mode == "auto":
            return "pointwise" if len(trajectories) == 1 else "cascade"
        return mode

    @needs_providers
    async def evaluate(self, ctx: EvaluationContext) -> EvaluationResult:
        ctx = hardened(ctx)
        started = time.perf_counter()
        ledger = CallLedger()
        mode: str | None = None
        client: Any = None
        panel: Panel[Grader] | None = None
        try:
            mode = self.resolve_mode(ctx.trajectories, ctx.config.llm_judge)
            panel = self._panel(ctx)
            client = panel.members[0][1].client
            committed = (await commit(panel, ledger, ctx.task, ctx.trajectories, ctx.config.llm_judge)
                         if ctx.config.llm_judge.commit_first else None)
            if mode == "pointwise":
                result = await self._pointwise(panel, ledger, ctx)
            elif mode == "cascade":
                result = await self._cascade(panel, ledger, ctx)
            else:
                result = await self._pairwise(panel, ledger, ctx)
            result.details["placement"] = {"seed": ctx.config.llm_judge.seed, **result.details.get("placement", {})}
            result.details["panel"] = panel_report(panel, result, ctx.config.llm_judge)
            if committed is not None:
                result.details["commit_first"] = committed
                if committed["applied"] and result.explanation:
                    result.explanation = "graded against the judge's own answer (commit-first); " + result.explanation
            if panel.retired and result.explanation:
                result.explanation += ("; panel member(s) " + ", ".join(panel.retired)
                                       + " failed and were left out: judged by " + ", ".join(
                                           x for x in panel.labels if x not in panel.retired))
        except Exception as exc:  # noqa: BLE001 - the contract: faults become a failed result, never an exception
            details = {"mode": mode, **_empty_escalation()}
            if panel is not None and panel.retired:
                details["panel"] = {"members": panel.labels, "retired": dict(panel.retired)}
            if isinstance(exc, InvalidJudgeInput):
                result = EvaluationResult.failure("llm_judge", str(exc), error_type="InvalidInput", details=details)
            else:
                result = EvaluationResult.failure("llm_judge", exc, details=details)
        result.calls = ledger.requests
        result.cost_usd = ledger.cost_usd() if ledger.requests else 0.0
        result.latency_ms = (time.perf_counter() - started) * 1000
        result.provenance = self._provenance(ctx.config, ledger, client, mode, result.latency_ms, ctx.task,
                                             seed=ctx.config.llm_judge.seed if len(ctx.trajectories) > 1
                                             or ctx.config.llm_judge.seed else None)
        if result.status != Status.failed:
            result.concerns = judge_concerns(result.details, result.candidates)
        return result

    def _panel(self, ctx: EvaluationContext) -> Panel[Grader]:
        """The graders: the one ``judge`` endpoint, or each member of ``llm_judge.panel`` through
        its own client (its own temperature over the judge's)."""
        assert ctx.providers is not None  # needs_providers
        cfg = ctx.config.llm_judge
        providers = ctx.config.providers
        run_repeat = int(ctx.extra.get("repeat", 0) or 0)
        if not cfg.panel:
            client = self._client or ctx.providers.chat(providers.judge, providers.prices)
            return Panel([(None, Grader(client, None, cfg, run_repeat))])
        members: list[tuple[str | None, Grader]] = []
        for label, member in zip(member_labels(cfg.panel, providers), cfg.panel):
            own = cfg if member.temperature is None else cfg.model_copy(update={"temperature": member.temperature})
            client = ctx.providers.chat(member.settings(providers), providers.prices)
            members.append((label, Grader(client, label, own, run_repeat)))
        return Panel(members)

    # ------------------------------------------------------------------ modes

    async def _pointwise(self, panel: Panel[Grader], ledger: CallLedger, ctx: EvaluationContext) -> EvaluationResult:
        cfg = ctx.config.llm_judge
        errors: list[BaseException] = []
        items = rubric(ctx.task)

        async def judged(t: Trajectory) -> CandidateResult:
            answers = await panel.each(lambda g: score_candidate(g, ledger, ctx.task, t))
            return next(iter(answers.values())) if panel.single else combine_scores(t.id, answers, items, cfg)

        def one(t: Trajectory) -> Any:
            """The candidate's score; a call failing on its input fails it alone (judge_faults.py)."""
            return contain(lambda: judged(t), lambda exc: CandidateResult(
                id=t.id, score=None, passed=None, status=Status.failed,
                details={"mode": "pointwise", "error": error_info(exc)}), errors)

        by_id = {t.id: t for t in ctx.trajectories}
        order = seeded_order(cfg.seed, ctx.task, list(by_id))
        judged_in_order = dict(zip(order, await gather_or_cancel(*(one(by_id[cid]) for cid in order))))
        candidates = [judged_in_order[t.id] for t in ctx.trajectories]
        raise_if_nothing_judged(sum(1 for c in candidates if c.status != Status.failed), errors)
        scored = [c for c in candidates if c.score is not None]
        position = {c.id: i for i, c in enumerate(candidates)}
        ranking = [c.id for c in sorted(scored, key=lambda c: (-c.score, position[c.id]))]  # type: ignore[operator]
        top = max((c.score for c in scored), default=None)
        best = [c.id for c in scored if c.score == top]
        details = {
            "mode": "pointwise", **_empty_escalation(),
            "unparsed_candidates": [c.id for c in candidates if c.status == Status.unparsed],
            "failed_candidates": [c.id for c in candidates if c.status == Status.failed],
            "tied_best": best if len(best) > 1 else [],
            "repeat_spread": {c.id: c.details.get("repeat_spread") for c in scored} if cfg.repeats > 1 else None,
            "repairs": ledger.repairs, "placement": {"order": order},
        }
        status = Status.ok if scored else Status.unparsed
        explanation = (f"pointwise rubric scores on {cfg.scale_min}..{cfg.scale_max}, normalized: "
                       + ", ".join(f"{c.id}={c.score:.3f}" if c.score is not None else f"{c.id}={c.status.value}"
                                   for c in candidates))
        return EvaluationResult(evaluator="llm_judge", status=status, best=best, ranking=ranking,
                                candidates=candidates, explanation=explanation, details=details)

    async def _cascade(self, panel: Panel[Grader], ledger: CallLedger, ctx: EvaluationContext) -> EvaluationResult:
        """Pointwise for everyone, then pairwise only among the close group (see module docstring)."""
        pointwise = await self._pointwise(panel, ledger, ctx)
        margin = ctx.config.llm_judge.pairwise_margin
        scored = {c.id: c.score for c in pointwise.candidates if c.score is not None}
        pointwise_calls = ledger.requests
        if not scored:
            pointwise.details.update(mode="cascade", close_group=[], pairwise_margin=margin,
                                     pointwise_calls=pointwise_calls, pairwise_calls=0)
            return pointwise
        top = max(scored.values())
        close = [cid for cid in pointwise.ranking if scored[cid] >= top - margin - 1e-12]
        details = {**pointwise.details, "mode": "cascade", "pairwise_margin": margin, "close_group": close,
                   "pointwise_ranking": list(pointwise.ranking), "pointwise_calls": pointwise_calls,
                   "pairwise_calls": 0, "full_tournament_calls": all_pairs_judgements(len(ctx.trajectories))
                   if len(ctx.trajectories) <= ctx.config.llm_judge.all_pairs_max else None}
        if len(close) < 2:
            pointwise.details = details
            pointwise.explanation = (f"cascade: pointwise scores settle it ({close[0]} leads by more than "
                                     f"{margin}); " + (pointwise.explanation or ""))
            return pointwise
        by_id = {t.id: t for t in ctx.trajectories}
        run = await run_pairwise(panel, ledger, ctx.task, [by_id[c] for c in close], ctx.config.llm_judge,
                                 raise_if_all_failed=False)
        duel = _pairwise_result(run, close, ledger, ctx.config.llm_judge)
        rest = [cid for cid in pointwise.ranking if cid not in close]
        duel_order = duel.ranking or close
        # A close candidate whose pairs all failed keeps its pointwise place after the duel's order.
        ranking = duel_order + [cid for cid in close if cid not in duel_order] + rest
        by_pair = {c.id: c for c in duel.candidates}
        candidates = []
        for c in pointwise.candidates:
            if c.id in by_pair:
                c = c.model_copy(update={"details": {**c.details, "pairwise": by_pair[c.id].details}})
            candidates.append(c)
        details.update({k: duel.details[k] for k in ("order_inconsistent_pairs", "unparsed_pairs", "failed_pairs",
                                                     "cycles", "position_bias", "seat_readouts_used", "pairs",
                                                     "copeland", "bradley_terry", "scheme")})
        details["placement"] = {**details.get("placement", {}), "tournament_order": run.schedule}
        if ctx.config.llm_judge.repeats > 1:
            details["pairwise_repeat_spread"] = duel.details["repeat_spread"]
        if run.member_orders:
            details["member_position_bias"] = duel.details["member_position_bias"]
        details["pairwise_calls"] = ledger.requests - pointwise_calls
        best = duel.best if duel.status == Status.ok else [c for c in close if scored[c] == top]
        details["tied_best"] = best if len(best) > 1 else []
        explanation = (f"cascade: pointwise scores, then both-order pairwise among {len(close)} within {margin} of "
                       f"the top ({', '.join(close)}): " + " > ".join(ranking))
        return EvaluationResult(evaluator="llm_judge", status=Status.ok, best=best, ranking=ranking,
                                candidates=candidates, explanation=explanation, details=details)

    async def _pairwise(self, panel: Panel[Grader], ledger: CallLedger, ctx: EvaluationContext) -> EvaluationResult:
        trajectories = list(ctx.trajectories)
        run = await run_pairwise(panel, ledger, ctx.task, trajectories, ctx.config.llm_judge)
        result = _pairwise_result(run, [t.id for t in trajectories], ledger, ctx.config.llm_judge)
        result.details["placement"] = {"tournament_order": run.schedule}
        return result

    # ------------------------------------------------------------------ provenance

    def _provenance(self, config: OracleConfig, ledger: CallLedger, client: Any, mode: str | None,
                    latency_ms: float, task: Task | None = None, seed: int | None = None) -> EvaluationProvenance:
        caps = getattr(client, "capabilities", None)
        return ledger.provenance(
            evaluator=self.spec(config), config_hash=config.hash(), mode=mode,
            model_requested=config.providers.judge.model,
            base_url=config.providers.judge.base_url, prompt_template_hash=prompt_hash(task),
            prompt_templates={**task_template_hashes(task),
                              **(commit_template_hashes() if config.llm_judge.commit_first else {})},
            structured_output=caps.structured_output if caps is not None else None,
            latency_ms=latency_ms, seed=seed)


def _empty_escalation() -> dict[str, Any]:
    return {"order_inconsistent_pairs": [], "cycles": [], "unparsed_pairs": [], "unparsed_candidates": [],
            "failed_pairs": [], "failed_candidates": [], "tied_best": [], "position_bias": None,
            "repeat_spread": None, "panel": None}


def _pairwise_result(run: PairwiseRun, ids: list[str], ledger: CallLedger, cfg: LLMJudgeConfig) -> EvaluationResult:
    r = run.ranking
    n = len(ids)
    read = [v for v in run.verdicts if v.counted]
    scores = normalized_copeland(r.copeland)
    candidates: list[CandidateResult] = []
    for cid in ids:
        mine = [v for v in run.verdicts if cid in (v.a, v.b)]
        mine_read = [v for v in mine if v.counted]
        mine_failed = [v for v in mine if v.failed]
        cand_details: dict[str, Any] = {
            "mode": "pairwise", "copeland": r.copeland[cid], "bradley_terry": r.bradley_terry[cid],
            "wins": sum(1 for v in mine_read if v.winner == cid),
            "losses": sum(1 for v in mine_read if v.winner not in (None, cid)),
            "ties": sum(1 for v in mine_read if v.winner is None),
            "pairs_judged": len(mine), "pairs_unparsed": len(mine) - len(mine_read) - len(mine_failed),
            "pairs_failed": len(mine_failed),
        }
        unscored = not read or (mine and not mine_read)
        # Unjudged because every one of its pairs failed on the input: failed, with the first error.
        failed = bool(unscored and mine and len(mine_failed) == len(mine))
        if failed:
            cand_details["error"] = mine_failed[0].evidence.get("error")
        status = Status.failed if failed else Status.unparsed if unscored else Status.ok
        candidates.append(CandidateResult(id=cid, score=None if unscored else scores[cid], passed=None,
                                          status=status, details=cand_details))
    # A candidate whose every pair failed was not judged: it is neither ranked nor a best.
    unjudged = {c.id for c in candidates if c.status == Status.failed}
    order = [cid for cid in r.order if cid not in unjudged]
    top = max((r.copeland[cid] for cid in order), default=0.0)
    best = [cid for cid in order if r.copeland[cid] == top] if read else []
    pairs = [{"a": v.a, "b": v.b, "winner": v.winner, "p_a": v.p_a, "order_inconsistent": v.order_inconsistent,
              "unparsed": v.unparsed, "failed": v.failed, **v.evidence} for v in run.verdicts]
    details: dict[str, Any] = {
        "mode": "pairwise", **_empty_escalation(),
        "scheme": r.scheme, "order": r.order, "copeland": r.copeland, "bradley_terry": r.bradley_terry,
        "tied_groups": r.tied_groups,
        "order_inconsistent_pairs": [[v.a, v.b] for v in run.verdicts if v.order_inconsistent],
        "unparsed_pairs": [[v.a, v.b] for v in run.verdicts if v.unparsed],
        "failed_pairs": [[v.a, v.b] for v in run.verdicts if v.failed],
        "cycles": r.cycles,
        "tied_best": best if len(best) > 1 else [],
        "position_bias": position_bias(run.orders),
        "judgements": r.judgements, "judgement_budget": judgement_budget(n),
        "round_robin_judgements": all_pairs_judgements(n),
        "seat_readouts_used": run.readouts_used, "repairs": ledger.repairs, "pairs": pairs,
        "repeat_spread": pairwise_repeat_spread(run.verdicts, ids) if cfg.repeats > 1 else None,
        "member_position_bias": {label: position_bias(o) for label, o in run.member_orders.items()} or None,
    }
    status = Status.ok if read else Status.unparsed
    explanation = (f"pairwise {r.scheme} tournament, {r.pairs_judged} pairs in both orders; order "
                   + " > ".join(order) + (f"; {len(details['order_inconsistent_pairs'])} order-inconsistent"
                                            if details["order_inconsistent_pairs"] else "")
                   + (f"; {len(r.cycles)} cycle(s)" if r.cycles else ""))
    return EvaluationResult(evaluator="llm_judge", status=status, best=best, ranking=order if read else [],
                            candidates=candidates, explanation=explanation, details=details)
