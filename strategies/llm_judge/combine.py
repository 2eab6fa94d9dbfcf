"""Several judgments of one thing made into one: the repeats of a judgment, the members of a panel.

Why at the level of each judgment: the cascade and the tournaments read one score per candidate
and one verdict per pair; combining there keeps them unchanged whether one judge answered once or
a panel answered k times each.

- Scores (a panel's members on one candidate): per criterion, the mean of the members' normalized
  scores, or the majority of their raw scores (the lowest of the most frequent, so a split never
  rounds up); then the weighted candidate score as for one judge.
- Verdicts (the repeats of a pair, a panel's members on a pair): each order's P(first candidate
  better) is averaged (a seat readout where the reply had one, else 1 / 0 from the written verdict);
  ``mean`` picks the side of the average of both orders, a tie when the two orders point different
  ways (``order_inconsistent``) or it is exactly 0.5; ``majority`` picks the winner named by more
  than half of the read verdicts (a tie, order-inconsistent or not, counts as a vote for nobody),
  and a tie when none has a majority.
"""

from __future__ import annotations

import statistics
from collections import Counter
from typing import Any, Mapping

from oracle.config.model import LLMJudgeConfig
from oracle.results.result import CandidateResult, Status

from oracle.strategies.llm_judge.pointwise import aggregate, normalize, spread, weighted
from oracle.strategies.llm_judge.prompts import RubricItem
from oracle.strategies.llm_judge.ranking import PairVerdict


def verdict_summary(v: PairVerdict) -> dict[str, Any]:
    """What a result keeps of one member's (or one repeat's) verdict on a pair."""
    return {"winner": v.winner, "p_a": v.p_a, "order_consistent": None if not v.counted else not v.order_inconsistent,
            "unparsed": v.unparsed, "p_a_by_order": v.evidence.get("p_a_by_order")}


def combine_verdicts(a: str, b: str, verdicts: list[PairVerdict], how: str, *, key: str,
                     evidence: dict[str, Any] | None = None) -> PairVerdict:
    """One verdict from several on the same pair (a, b) (see the module docstring). ``key`` names
    the parts in the evidence (``repeats``, ``members``)."""
    if len(verdicts) == 1:
        return verdicts[0]
    ev: dict[str, Any] = {**(evidence or {}), key: [dict(verdict_summary(v), **v.evidence) for v in verdicts]}
    read = [v for v in verdicts if v.counted and v.evidence.get("p_a_by_order") is not None]
    if not read:
        return PairVerdict(a=a, b=b, winner=None, p_a=0.5, unparsed=True, evidence=ev)
    pa_1 = statistics.fmean(v.evidence["p_a_by_order"][0] for v in read)
    pa_2 = statistics.fmean(v.evidence["p_a_by_order"][1] for v in read)
    ev["p_a_by_order"] = [pa_1, pa_2]
    flipped = (pa_1 - 0.5) * (pa_2 - 0.5) < 0
    if how == "mean":
        p_a = min(1.0, max(0.0, (pa_1 + pa_2) / 2))
        winner = None if flipped or p_a == 0.5 else a if p_a > 0.5 else b
    else:
        votes = Counter(v.winner for v in read)
        winner = next((w for w in (a, b) if votes[w] * 2 > len(read)), None)
        p_a = (votes[a] + 0.5 * votes[None]) / len(read)
    if winner is None:
        return PairVerdict(a=a, b=b, winner=None, p_a=0.5, order_inconsistent=flipped, evidence=ev)
    return PairVerdict(a=a, b=b, winner=winner, p_a=p_a, evidence=ev)


def member_scores(c: CandidateResult) -> dict[str, Any]:
    """One member's judgment of one candidate, as the panel report shows it."""
    criteria = c.details.get("criteria") or {}
    out: dict[str, Any] = {"status": c.status.value, "score": c.score,
                           "criteria": {cid: {"score": v["score"], "normalized": v["normalized"]}
                                        for cid, v in criteria.items()}}
    if c.details.get("repeat_spread") is not None:
        out["repeat_spread"] = c.details["repeat_spread"]
    if c.status == Status.failed:
        out["error"] = c.details.get("error")
    return out


def combine_scores(cid: str, members: Mapping[str | None, CandidateResult], items: list[RubricItem],
                   cfg: LLMJudgeConfig) -> CandidateResult:
    """A panel's score for one candidate (see the module docstring); each member's scores and the
    spread per criterion are kept under ``details.panel``."""
    report = {str(label): member_scores(c) for label, c in members.items()}
    read = {str(label): c for label, c in members.items() if c.status == Status.ok and c.score is not None}
    base: dict[str, Any] = {"mode": "pointwise", "repeats": cfg.repeats, "aggregate": cfg.aggregate,
                            "panel_aggregate": cfg.panel_aggregate,
                            "reference_guided": next(iter(members.values())).details.get("reference_guided"),
                            "replies": [dict(r, member=str(label)) for label, c in members.items()
                                        for r in c.details.get("replies", [])]}
    if not read:
        base["panel"] = {"members": report, "agreement": {}}
        return CandidateResult(id=cid, score=None, passed=None, status=Status.unparsed, details=base)
    criteria: dict[str, Any] = {}
    normalized: dict[str, float] = {}
    agreement: dict[str, Any] = {}
    for it in items:
        norms = {label: c.details["criteria"][it.id]["normalized"] for label, c in read.items()}
        raws = [c.details["criteria"][it.id]["score"] for c in read.values()]
        if cfg.panel_aggregate == "mean":
            normalized[it.id] = statistics.fmean(norms.values())
            raw = cfg.scale_min + normalized[it.id] * (cfg.scale_max - cfg.scale_min)
        else:
            raw = aggregate(raws, "majority")
            normalized[it.id] = normalize(raw, cfg)
        gap = max(norms.values()) - min(norms.values())
        agreement[it.id] = {"spread": gap, "within": gap <= cfg.panel_disagreement + 1e-12}
        criteria[it.id] = {"criterion": it.text, "weight": it.weight, "score": raw, "normalized": normalized[it.id],
                           "members": norms, "samples": raws,
                           "rationales": [r for c in read.values() for r in c.details["criteria"][it.id]["rationales"]]}
    score = weighted(normalized, items)
    lp: list[float] = [v for c in read.values() if (v := c.details.get("logprob_weighted_score")) is not None]
    base.update({"samples_read": sum(c.details.get("samples_read", 0) for c in read.values()),
                 "criteria": criteria,
                 "repeat_spread": spread([s for c in read.values() for s in _per_sample(c)]),
                 "logprob_weighted_score": statistics.fmean(lp) if len(lp) == len(read) else None,
                 "panel": {"members": report, "agreement": agreement}})
    passed = None if cfg.pass_threshold is None else score >= cfg.pass_threshold
    return CandidateResult(id=cid, score=score, passed=passed, status=Status.ok, details=base)


def _per_sample(c: CandidateResult) -> list[float]:
    """A member's per-repeat candidate scores."""
    return list(c.details.get("per_sample") or [c.score])
