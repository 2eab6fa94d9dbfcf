"""The bias report of a judge arm: order flips, first-position wins, length bias, self-preference.

Why from the run records: like every other figure of ``summary.json`` (oracle/comparison/summary.py),
these are recomputed from ``runs.jsonl`` alone, so a resumed comparison reports the same figures.
A figure that cannot be computed (no evidence of that kind) is None, never 0; each one carries
its ``n`` (the units it was computed over) and says in ``source`` what those units are.
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from oracle.comparison._labels import LabelledItem
from oracle.comparison._metrics import BOOTSTRAP_SAMPLES
from oracle.comparison.records import RunRecord
from oracle.results.result import EvaluationResult


def pair_seats(result: EvaluationResult) -> list[dict[str, Any]]:
    """The LLM judge's both-order pair evidence, cut to what the bias report needs: for each pair
    ``{"a", "b", "seats": [seat won with a shown first, seat won with b shown first]}``."""
    pairs = result.details.get("pairs") if isinstance(result.details, dict) else None
    out: list[dict[str, Any]] = []
    for pair in pairs or []:
        if not isinstance(pair, dict) or pair.get("failed"):
            continue
        a, b = pair.get("a"), pair.get("b")
        seats: list[str | None] = [None, None]
        for order in pair.get("orders") or []:
            if not isinstance(order, dict):
                continue
            seat = order.get("winner_seat")
            slot = 0 if order.get("seat_a") == a else 1 if order.get("seat_a") == b else None
            if slot is not None:
                seats[slot] = seat if seat in ("A", "B") else None
        out.append({"a": a, "b": b, "seats": seats})
    return out


JUDGE_ARMS = ("llm_judge", "decision_judge")
"""Arms whose bias is reported; ``routed`` too, over its records routed to one of them."""


class Rate(BaseModel):
    """A share with its evidence: ``value`` = ``count`` / ``n``; None when ``n`` is 0."""

    model_config = ConfigDict(extra="forbid")

    value: float | None
    n: int
    count: int
    chance: float | None = None
    """The value a judge without this bias would have on average (first position: 1/k per unit)."""
    by_source: dict[str, dict[str, Any]] = Field(default_factory=dict)
    """The same figure per kind of evidence (``value``, ``n``, ``count``)."""
    source: str


class LengthBias(BaseModel):
    """Spearman correlation of answer length (characters) and score within each label stratum,
    averaged over the strata weighted by their size; interval: seeded bootstrap over items."""

    model_config = ConfigDict(extra="forbid")

    value: float | None
    ci95: tuple[float, float] | None
    n: int
    """Candidates (item x candidate, the score averaged over the item's runs) in strata that count."""
    items: int
    strata: dict[str, int] = Field(default_factory=dict)
    """Label value -> candidates in that stratum (a stratum counts from 3 candidates on)."""
    source: str


class BiasReport(BaseModel):
    """One judge arm's bias figures (oracle/comparison/_bias.py)."""

    model_config = ConfigDict(extra="forbid")

    order_flip_rate: Rate
    first_position_rate: Rate
    length_bias: LengthBias
    self_preference: Rate | None
    """None when no candidate carries ``metadata.model``."""


FLIP_SOURCE = ("share of verdicts judged in both orders whose winner changed with the order: the LLM judge's "
               "own both-order pairs (judge_pairs: the same seat won both times) and compare --both-orders "
               "(compare_orders: an item's top candidate differs between the given and the reversed order, same "
               "repeat)")
FIRST_SOURCE = ("share of verdicts won by the candidate shown first: the LLM judge's single-order pairwise "
                "verdicts (judge_pairs: seat A won) and one-question choices over all candidates shown together "
                "(joint_choice: the top candidate was first); chance = the mean of 1/k")
LENGTH_SOURCE = ("Spearman rank correlation of answer length (characters) and the arm's score per candidate "
                 "within candidates of the same label, weighted mean over the strata; 95 % interval from a seeded "
                 "bootstrap over items")
SELF_SOURCE = ("share of runs with candidates of the judge's own model (metadata.model equal to the model the "
               "judge requested) and of others whose top candidate is its own; chance = the own share of candidates")
MIN_STRATUM = 3


def _rate(parts: dict[str, tuple[int, int]], source: str, chance: float | None = None) -> Rate:
    n = sum(p[1] for p in parts.values())
    count = sum(p[0] for p in parts.values())
    return Rate(value=round(count / n, 6) if n else None, n=n, count=count,
                chance=None if chance is None else round(chance, 6), source=source,
                by_source={k: {"value": round(c / m, 6) if m else None, "n": m, "count": c}
                           for k, (c, m) in parts.items()})


def _live(records: Sequence[RunRecord]) -> list[RunRecord]:
    return [r for r in records if r.status not in ("n/a", "failed")]


def order_flips(records: Sequence[RunRecord]) -> Rate:
    pair_n = pair_flips = 0
    for r in _live(records):
        for p in r.pairs:
            first, second = p.get("seats") or [None, None]
            if first is not None and second is not None:
                pair_n += 1
                pair_flips += first == second
    tops: dict[tuple[str, int], dict[str, str]] = {}
    for r in _live(records):
        if r.top is not None:
            tops.setdefault((r.item_id, r.repeat), {})[r.order] = r.top
    both = [v for v in tops.values() if len(v) == 2]
    order_flipped = sum(v["given"] != v["reversed"] for v in both)
    return _rate({"judge_pairs": (pair_flips, pair_n), "compare_orders": (order_flipped, len(both))}, FLIP_SOURCE)


def first_position(records: Sequence[RunRecord]) -> Rate:
    seat_n = seat_first = 0
    joint_n = joint_first = 0
    chances: list[float] = []
    for r in _live(records):
        for p in r.pairs:
            for seat in p.get("seats") or []:
                if seat is not None:
                    seat_n += 1
                    seat_first += seat == "A"
                    chances.append(0.5)
        shown = r.options_shown.get("candidates") or []
        if "candidates" in r.distribution and r.top is not None and len(shown) >= 2:
            joint_n += 1
            joint_first += r.top == shown[0]
            chances.append(1 / len(shown))
    chance = sum(chances) / len(chances) if chances else None
    return _rate({"judge_pairs": (seat_first, seat_n), "joint_choice": (joint_first, joint_n)}, FIRST_SOURCE,
                 chance)


def rankdata(values: Sequence[float]) -> np.ndarray:
    """Ranks from 1, ties sharing their mean rank (what Spearman's rho needs)."""
    arr = np.asarray(values, dtype=float)
    order = np.argsort(arr, kind="mergesort")
    ranks = np.empty(len(arr))
    sorted_vals = arr[order]
    i = 0
    while i < len(arr):
        j = i
        while j + 1 < len(arr) and sorted_vals[j + 1] == sorted_vals[i]:
            j += 1
        ranks[order[i:j + 1]] = (i + j) / 2 + 1
        i = j + 1
    return ranks


def _spearman(xs: Sequence[float], ys: Sequence[float]) -> float | None:
    if len(xs) < MIN_STRATUM:
        return None
    rx, ry = rankdata(xs), rankdata(ys)
    if np.std(rx) == 0 or np.std(ry) == 0:
        return None
    return float(np.corrcoef(rx, ry)[0, 1])


def _stratified(units: Sequence[tuple[str, str, float, float]]) -> tuple[float | None, dict[str, int]]:
    strata: dict[str, list[tuple[float, float]]] = {}
    for _, label, length, score in units:
        strata.setdefault(label, []).append((length, score))
    total = weight = 0.0
    sizes: dict[str, int] = {}
    for label in sorted(strata):
        pairs = strata[label]
        rho = _spearman([p[0] for p in pairs], [p[1] for p in pairs])
        if rho is not None:
            sizes[label] = len(pairs)
            total += rho * len(pairs)
            weight += len(pairs)
    return (total / weight if weight else None), sizes


def length_bias(records: Sequence[RunRecord], labels: Mapping[str, Mapping[str, str]],
                lengths: Mapping[str, Mapping[str, int]], *, seed: int,
                samples: int = BOOTSTRAP_SAMPLES) -> LengthBias:
    """``labels``: item -> candidate -> label value; ``lengths``: item -> candidate -> characters."""
    scores: dict[tuple[str, str], list[float]] = {}
    for r in _live(records):
        for cid, score in r.scores.items():
            if score is not None and cid in labels.get(r.item_id, {}) and cid in lengths.get(r.item_id, {}):
                scores.setdefault((r.item_id, cid), []).append(float(score))
    units = [(item, labels[item][cid], float(lengths[item][cid]), sum(v) / len(v))
             for (item, cid), v in sorted(scores.items())]
    value, sizes = _stratified(units)
    ci = None
    if value is not None:
        by_item: dict[str, list[tuple[str, str, float, float]]] = {}
        for u in units:
            by_item.setdefault(u[0], []).append(u)
        ids = sorted(by_item)
        rng = np.random.default_rng(seed)
        stats = []
        for picks in rng.integers(0, len(ids), size=(samples, len(ids))):
            v, _ = _stratified([u for k in picks for u in by_item[ids[k]]])
            if v is not None:
                stats.append(v)
        if stats:
            low, high = np.percentile(np.array(stats), [2.5, 97.5])
            ci = (round(float(low), 6), round(float(high), 6))
    counted = {u[0] for u in units if u[1] in sizes}
    return LengthBias(value=None if value is None else round(value, 6), ci95=ci, n=sum(sizes.values()),
                      items=len(counted), strata=sizes, source=LENGTH_SOURCE)


def self_preference(records: Sequence[RunRecord], models: Mapping[str, Mapping[str, str]]) -> Rate | None:
    """``models``: item -> candidate -> ``metadata.model``; None when no candidate carries one."""
    if not any(models.values()):
        return None
    n = own_top = 0
    chances: list[float] = []
    for r in _live(records):
        judge = (r.model_requested or "").strip()
        cands = r.options_shown.get("candidates") or []
        if not judge or r.top is None or len(cands) < 2:
            continue
        own = [c for c in cands if models.get(r.item_id, {}).get(c, "").strip() == judge]
        if not own or len(own) == len(cands):
            continue
        n += 1
        own_top += r.top in own
        chances.append(len(own) / len(cands))
    return _rate({"runs": (own_top, n)}, SELF_SOURCE, sum(chances) / len(chances) if chances else None)


def bias_report(records: Sequence[RunRecord], items: Sequence[LabelledItem], *, seed: int) -> BiasReport:
    """The four figures over one arm's records (routed: pass only its records routed to a judge)."""
    labels: dict[str, dict[str, str]] = {}
    lengths: dict[str, dict[str, int]] = {}
    models: dict[str, dict[str, str]] = {}
    for item in items:
        passed = item.label.passed or {}
        best = set(item.label.best or [])
        labels[item.id] = {t.id: ("passed" if passed[t.id] else "failed") if t.id in passed
                           else ("best" if t.id in best else "not best") for t in item.trajectories
                           if t.id in passed or best}
        lengths[item.id] = {t.id: len(t.code or t.answer or "") for t in item.trajectories}
        models[item.id] = {t.id: str(t.metadata["model"]) for t in item.trajectories
                           if isinstance(t.metadata.get("model"), str)}
    return BiasReport(order_flip_rate=order_flips(records), first_position_rate=first_position(records),
                      length_bias=length_bias(records, labels, lengths, seed=seed),
                      self_preference=self_preference(records, models))


def bias_records(arm: str, records: Sequence[RunRecord]) -> list[RunRecord] | None:
    """The records an arm's bias is computed over; None for an arm that is no judge."""
    if arm in JUDGE_ARMS:
        return list(records)
    if arm == "routed":
        return [r for r in records if r.evaluator in JUDGE_ARMS]
    return None
