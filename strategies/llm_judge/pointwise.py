"""Pointwise rubric scoring: each candidate against weighted criteria, with repeats and spread.

One call per candidate scores all criteria together (one call per criterion when
``per_criterion_calls`` is set). ``repeats`` samples are aggregated per criterion by mean or by
majority (the most frequent score; among equally frequent scores the lowest, so a split vote never
rounds up). Raw scores are normalized to 0..1 over the configured scale and combined by weight
(weight 0 criteria are scored and shown but do not count). A sample counts only if every criterion
in it was read; a candidate with no readable sample is ``unparsed`` with its raw replies kept.
"""

from __future__ import annotations

import statistics
from collections import Counter
from typing import Any

from oracle.config.model import LLMJudgeConfig
from oracle.results.result import CandidateResult, Status
from oracle.tasks.task import Task, Trajectory

from oracle.strategies.llm_judge.calls import CallLedger, Grader, ask, judge_request
from oracle.strategies.llm_judge.parse import (CriterionScore, Readout, expected_value, parse_pointwise,
                                               pointwise_readouts)
from oracle.strategies.llm_judge.prompts import RubricItem, pointwise_messages, pointwise_schema, rubric
from oracle.strategies._judging.gather import gather_or_cancel


def aggregate(scores: list[int], how: str) -> float:
    """Mean, or majority (lowest of the most frequent values)."""
    if how == "mean":
        return statistics.fmean(scores)
    counts = Counter(scores)
    top = max(counts.values())
    return float(min(v for v, c in counts.items() if c == top))


def normalize(raw: float, cfg: LLMJudgeConfig) -> float:
    return (raw - cfg.scale_min) / (cfg.scale_max - cfg.scale_min)


def weighted(values: dict[str, float], items: list[RubricItem]) -> float:
    total = sum(it.weight for it in items if it.weight > 0)
    return sum(values[it.id] * it.weight for it in items if it.weight > 0) / total


def spread(values: list[float]) -> dict[str, float]:
    """Grader variance over repeats: min, max, range and population stdev."""
    return {"min": min(values), "max": max(values), "range": max(values) - min(values),
            "stdev": statistics.pstdev(values) if len(values) > 1 else 0.0}


async def _one_sample(grader: Grader, ledger: CallLedger, task: Task, candidate: Trajectory,
                      groups: list[list[RubricItem]], repeat: int
                      ) -> tuple[dict[str, CriterionScore] | None, dict[str, Readout], list[dict[str, Any]]]:
    cfg = grader.cfg

    def request(group: list[RubricItem]):
        ids = [it.id for it in group]
        req = judge_request(grader, pointwise_messages(task, candidate, group, scale_min=cfg.scale_min,
                                                       scale_max=cfg.scale_max, own_answer=grader.own_answer),
                            pointwise_schema(group, cfg.scale_min, cfg.scale_max), repeat=repeat)
        return ask(grader, ledger, req, lambda text: parse_pointwise(text, ids, cfg.scale_min, cfg.scale_max),
                   source="sampled" if cfg.repeats > 1 and cfg.temperature > 0 else "verbalized")

    answers = await gather_or_cancel(*(request(g) for g in groups))
    scores: dict[str, CriterionScore] = {}
    readouts: dict[str, Readout] = {}
    evidence = [a.evidence() for a in answers]
    for a in answers:
        if a.value is None:
            return None, {}, evidence
        scores.update(a.value)
        readouts.update(pointwise_readouts(a.reply.text, a.reply.logprobs, a.value, cfg.scale_min, cfg.scale_max))
    return scores, readouts, evidence


async def score_candidate(grader: Grader, ledger: CallLedger, task: Task, candidate: Trajectory) -> CandidateResult:
    """Score one candidate on the task's rubric (or the default overall criterion); each repeat's
    requests carry their repeat index (cache salt, sampling seed)."""
    cfg = grader.cfg
    items = rubric(task)
    groups = [[it] for it in items] if cfg.per_criterion_calls else [items]
    samples = await gather_or_cancel(*(_one_sample(grader, ledger, task, candidate, groups, i)
                                     for i in range(cfg.repeats)))
    calls_evidence = [ev for _, _, evs in samples for ev in evs]
    read = [(s, r) for s, r, _ in samples if s is not None]
    base: dict[str, Any] = {"mode": "pointwise", "repeats": cfg.repeats, "samples_read": len(read),
                            "aggregate": cfg.aggregate, "reference_guided": bool(task.reference or grader.own_answer),
                            "replies": calls_evidence}
    if not read:
        return CandidateResult(id=candidate.id, score=None, passed=None, status=Status.unparsed, details=base)

    criteria: dict[str, Any] = {}
    normalized: dict[str, float] = {}
    for it in items:
        raw = [s[it.id].score for s, _ in read]
        agg = aggregate(raw, cfg.aggregate)
        normalized[it.id] = normalize(agg, cfg)
        criteria[it.id] = {"criterion": it.text, "weight": it.weight, "score": agg, "normalized": normalized[it.id],
                           "samples": raw, "rationales": [s[it.id].rationale for s, _ in read]}
    score = weighted(normalized, items)
    per_sample = [weighted({it.id: normalize(s[it.id].score, cfg) for it in items}, items) for s, _ in read]

    # Logprob-weighted score: expectation over the score tokens, only if every criterion of every
    # read sample has a readout; otherwise recorded as unavailable with the reasons.
    expectations: dict[str, list[float]] = {it.id: [] for it in items}
    reasons: set[str] = set()
    for _, readouts in read:
        for it in items:
            r = readouts.get(it.id, Readout(reason="no_readout"))
            value = expected_value(r)
            if value is None:
                reasons.add(r.reason or "no_readout")
            else:
                expectations[it.id].append(value)
                criteria[it.id].setdefault("logprob_readouts", []).append(r.as_dict())
    lp_score = None
    if not reasons:
        lp_norm = {cid: normalize(statistics.fmean(v), cfg) for cid, v in expectations.items()}
        lp_score = weighted(lp_norm, items)
        for cid, v in expectations.items():
            criteria[cid]["logprob_expected_score"] = statistics.fmean(v)
    base.update({
        "criteria": criteria,
        "repeat_spread": spread(per_sample),
        "per_sample": per_sample,
        "logprob_weighted_score": lp_score,
        "logprob_weighted_unavailable": sorted(reasons) or None,
    })
    passed = None if cfg.pass_threshold is None else score >= cfg.pass_threshold
    return CandidateResult(id=candidate.id, score=score, passed=passed, status=Status.ok, details=base)
