"""``summary.json``: the figures of a comparison, computed from the run records alone.

Why from the records: a run killed halfway and resumed must give the same summary as one that
never stopped, so nothing here reads state that only lived in the first process. Timing figures
(latencies, elapsed time) sit under keys named ``latency_ms``, ``call_latency_ms`` and ``timings``
so that two runs can be compared "apart from timings".
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any, Mapping, Sequence

from pydantic import BaseModel, ConfigDict, Field

from oracle.comparison._labels import LABEL_KINDS, LabelledItem
from oracle.comparison._metrics import (agreement, bootstrap_interval, calibration, cohen_kappa, percentile,
                                    stability, total_or_none, units)
from oracle.comparison._bias import BiasReport, bias_records, bias_report
from oracle.comparison.records import EVALUATOR_ARMS, RunRecord
from oracle.comparison._verifier_labels import LabelSource, verifier_labels

SCHEMA_VERSION = "1"
LABEL_SOURCES = ("gold", "verifier")


class KindAgreement(BaseModel):
    model_config = ConfigDict(extra="forbid")

    units: int
    decided: int
    agreement: float | None


class ArmSummary(BaseModel):
    """One arm's figures over every item, repeat and order."""

    model_config = ConfigDict(extra="forbid")

    arm: str
    n: int
    """Items the arm could judge (its records are not ``n/a``)."""
    not_applicable: int
    not_applicable_reasons: dict[str, int] = Field(default_factory=dict)
    runs: int
    units: int
    decided: int
    answered_items: int = 0
    """Items with at least one verdict (a decided unit): what a rubric release counts against
    ``rubrics.min_evidence_items``."""
    coverage: float | None
    agreement: float | None
    agreement_ci95: tuple[float, float] | None
    kappa: float | None
    """Cohen's kappa of verdicts vs labels over ``passed`` and ``answers`` units with a verdict."""
    by_kind: dict[str, KindAgreement] = Field(default_factory=dict)
    repeat_items: int
    repeat_changed: int
    repeat_change_rate: float | None
    order_items: int
    order_flipped: int
    order_flip_rate: float | None
    abstained: int
    unparsed: int
    failed: int
    skipped: int = 0
    """Runs not run to the end because the budget was spent (``--max-calls``/``--max-cost-usd``); a rerun
    with a larger budget computes them."""
    failure_reasons: dict[str, int] = Field(default_factory=dict)
    """What the failed runs said ("ErrorType: message") -> how many said it, the first failure's
    reason first (records in key order, so a resumed comparison says the same)."""
    late: int
    """Runs past ``--timeout-s`` (their verdicts never count as correct)."""
    latency_ms: dict[str, float | None]
    call_latency_ms: dict[str, float | None]
    calls: int | None
    calls_per_run: float | None
    input_tokens: int | None
    output_tokens: int | None
    cost_usd: float | None
    cost_per_100_items_usd: float | None
    """Cost of one pass over 100 items (all runs' cost / runs x 100); None when a price is unknown."""
    models: list[str] = Field(default_factory=list)
    calibration: list[dict[str, Any]] = Field(default_factory=list)
    routing_accuracy: float | None = None
    """routed only: share of items whose chosen evaluator is the labelled one."""
    routing_labelled: int = 0
    routes: dict[str, int] = Field(default_factory=dict)
    bias: BiasReport | None = None
    """Judge arms (routed: its runs routed to a judge): order flips, first-position wins, length bias,
    self-preference (oracle/comparison/_bias.py). None for the verifier and the baseline."""
    gold: KindAgreement | None = None
    """``--labels verifier`` only: agreement with the file's gold labels on the same items and runs."""


class RoutingGap(BaseModel):
    """Item-macro agreement (an item without a verdict counts 0) on the same items for all three."""

    model_config = ConfigDict(extra="forbid")

    items: int
    routed: float | None
    best_single_arm: str | None
    best_single_arm_agreement: float | None
    per_item_best: float | None
    """Upper bound: each item judged by whichever evaluator arm agreed best on it."""


class CompareSummary(BaseModel):
    """The whole comparison: settings, per-arm figures, the routing gap."""

    model_config = ConfigDict(extra="forbid")

    schema_version: str = SCHEMA_VERSION
    items: int
    label_kinds: dict[str, int]
    arms: list[str]
    repeats: int
    orders: list[str]
    seed: int
    timeout_s: float | None
    config_hash: str
    source: str | None = None
    dropped_reserved: int = 0
    results: list[ArmSummary]
    routing_gap: RoutingGap | None = None
    timings: dict[str, float] = Field(default_factory=dict)
    label_source: str = "gold"
    """What the arms are scored against: ``gold`` (the file's labels) or ``verifier`` (execution: the
    verifier's pass/fail per candidate; ``labels`` says what was labelled and left out)."""
    labels: LabelSource | None = None
    label_arm: ArmSummary | None = None
    """``--labels verifier``: the verifier arm, which produced the labels and is left out of ``results``
    and the ranking; its agreement here is with the gold labels."""
    rubric_hashes: dict[str, str] = Field(default_factory=dict)
    """Rubric as the tasks named it (``NAME``, ``NAME@N``, ``NAME@draft``) -> the content hash it
    resolved to: what ``oracle rubric release --evidence`` checks against the draft."""


def _item_pairs(records: Sequence[RunRecord], by_id: dict[str, LabelledItem]) -> dict[str, tuple[int, int]]:
    out: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for r in records:
        us = units(r, by_id[r.item_id])
        out[r.item_id][0] += sum(u.correct for u in us)
        out[r.item_id][1] += sum(u.decided for u in us)
    return {k: (v[0], v[1]) for k, v in out.items()}


def arm_summary(arm: str, records: Sequence[RunRecord], by_id: dict[str, LabelledItem], *, seed: int) -> ArmSummary:
    live = [r for r in records if r.status != "n/a"]
    na_items = {r.item_id for r in records if r.status == "n/a"} - {r.item_id for r in live}
    reasons: dict[str, int] = defaultdict(int)
    for r in records:
        if r.status == "n/a" and r.item_id in na_items and r.repeat == 0 and r.order == "given":
            reasons[r.reason or "not applicable"] += 1
    all_units = [u for r in live for u in units(r, by_id[r.item_id])]
    decided = [u for u in all_units if u.decided]
    per_kind = {k: KindAgreement(units=sum(u.kind == k for u in all_units),
                                 decided=sum(u.decided for u in all_units if u.kind == k),
                                 agreement=agreement(u for u in all_units if u.kind == k))
                for k in LABEL_KINDS if any(u.kind == k for u in all_units)}
    pairs = _item_pairs(live, by_id)
    latencies = [r.latency_ms for r in live if r.latency_ms is not None]
    call_lat = [r.call_latency_ms for r in live if r.call_latency_ms is not None]
    cost = total_or_none(r.cost_usd for r in live)
    calls = total_or_none(r.calls for r in live)
    stab = stability(live)
    routes: dict[str, int] = defaultdict(int)
    routing_hits = routing_n = 0
    if arm == "routed":
        for r in live:
            if r.repeat == 0 and r.order == "given":
                routes[r.evaluator or "none"] += 1
                wanted = by_id[r.item_id].label.evaluator
                if wanted is not None:
                    routing_n += 1
                    routing_hits += r.evaluator == wanted
    return ArmSummary(
        arm=arm, n=len({r.item_id for r in live}), not_applicable=len(na_items),
        not_applicable_reasons=dict(sorted(reasons.items())), runs=len(live), units=len(all_units),
        decided=len(decided), answered_items=sum(1 for _, d in pairs.values() if d > 0),
        coverage=round(len(decided) / len(all_units), 6) if all_units else None,
        agreement=_round(agreement(all_units)),
        agreement_ci95=bootstrap_interval([pairs[k] for k in sorted(pairs)], seed=seed),
        kappa=cohen_kappa([(u.label, u.verdict) for u in decided if u.kind in ("passed", "answers")]),
        by_kind=per_kind, **stab,
        abstained=sum(r.status == "abstained" for r in live), unparsed=sum(r.status == "unparsed" for r in live),
        failed=sum(r.status == "failed" for r in live), skipped=sum(r.status == "skipped" for r in live),
        failure_reasons=failure_reasons(live),
        late=sum(not r.within_timeout for r in live),
        latency_ms={"p50": percentile(latencies, 50), "p95": percentile(latencies, 95)},
        call_latency_ms={"p50": percentile(call_lat, 50), "p95": percentile(call_lat, 95)},
        calls=int(calls) if calls is not None else None,
        calls_per_run=_round(calls / len(live)) if (calls is not None and live) else None,
        input_tokens=_int(total_or_none(r.input_tokens for r in live)),
        output_tokens=_int(total_or_none(r.output_tokens for r in live)),
        cost_usd=_round(cost),
        cost_per_100_items_usd=_round(cost / len(live) * 100) if (cost is not None and live) else None,
        models=sorted({m for r in live for m in r.models_answered}),
        calibration=calibration(u for u in all_units if u.kind in ("answers", "best")),
        routing_accuracy=_round(routing_hits / routing_n) if routing_n else None, routing_labelled=routing_n,
        routes=dict(sorted(routes.items())), bias=_bias(arm, live, by_id, seed))


def _bias(arm: str, live: Sequence[RunRecord], by_id: dict[str, LabelledItem], seed: int) -> BiasReport | None:
    chosen = bias_records(arm, live)
    return None if chosen is None else bias_report(chosen, [by_id[k] for k in sorted(by_id)], seed=seed)


def gold_agreement(records: Sequence[RunRecord], gold: dict[str, LabelledItem]) -> KindAgreement:
    """An arm's agreement with the gold labels over the records of the items in ``gold``."""
    us = [u for r in records if r.status != "n/a" and r.item_id in gold for u in units(r, gold[r.item_id])]
    return KindAgreement(units=len(us), decided=sum(u.decided for u in us), agreement=_round(agreement(us)))


FAILURE_TEXT = 300
"""A failure's reason is cut here: summary.json keeps the figures, the records keep the whole error."""


def failure_reasons(records: Sequence[RunRecord]) -> dict[str, int]:
    """"ErrorType: message" of each failed record -> count, in order of first appearance."""
    out: dict[str, int] = {}
    for r in records:
        if r.status != "failed":
            continue
        error = r.error or {}
        text = f"{error.get('type') or 'error'}: {error.get('message') or 'no message recorded'}"
        text = " ".join(text.split())[:FAILURE_TEXT]
        out[text] = out.get(text, 0) + 1
    return out


def routing_gap(records_by_arm: Mapping[str, Sequence[RunRecord]], by_id: dict[str, LabelledItem]) -> RoutingGap | None:
    """Routed vs the best single evaluator arm vs the per-item best arm, item-macro."""
    evaluators = [a for a in EVALUATOR_ARMS if a in records_by_arm]
    ids = sorted(by_id)
    if "routed" not in records_by_arm or not evaluators or not ids:
        return None

    def per_item(arm: str) -> dict[str, float]:
        pairs = _item_pairs([r for r in records_by_arm[arm] if r.status != "n/a"], by_id)
        return {k: (c / d if d else 0.0) for k, (c, d) in pairs.items()}

    scores = {a: per_item(a) for a in evaluators}
    routed = per_item("routed")
    macro = {a: sum(scores[a].get(i, 0.0) for i in ids) / len(ids) for a in evaluators}
    best_arm = max(evaluators, key=lambda a: (macro[a], -evaluators.index(a)))
    upper = sum(max(scores[a].get(i, 0.0) for a in evaluators) for i in ids) / len(ids)
    return RoutingGap(items=len(ids), routed=_round(sum(routed.get(i, 0.0) for i in ids) / len(ids)),
                      best_single_arm=best_arm, best_single_arm_agreement=_round(macro[best_arm]),
                      per_item_best=_round(upper))


def build_summary(records: Sequence[RunRecord], items: Sequence[LabelledItem], *, arms: Sequence[str],
                  repeats: int, orders: Sequence[str], seed: int, timeout_s: float | None, config_hash: str,
                  source: str | None = None, dropped_reserved: int = 0,
                  timings: dict[str, float] | None = None, label_source: str = "gold") -> CompareSummary:
    if label_source not in LABEL_SOURCES:
        raise ValueError(f"label_source: {label_source!r} is not one of {LABEL_SOURCES}")
    ordered = sorted(records, key=lambda r: r.key)
    gold_by_id = {i.id: i for i in items}
    scored, label_info = (verifier_labels(items, ordered) if label_source == "verifier" else (list(items), None))
    by_id = {i.id: i for i in scored}
    by_arm: dict[str, list[RunRecord]] = {a: [] for a in arms}
    for r in ordered:
        if r.arm in by_arm and r.item_id in gold_by_id:
            by_arm[r.arm].append(r)
    kinds: dict[str, int] = defaultdict(int)
    for i in scored:
        for k in i.label.kinds() + (["evaluator"] if i.label.evaluator else []):
            kinds[k] += 1
    ranked = [a for a in arms if not (label_info is not None and a == "verifier")]
    results = []
    for a in ranked:
        summary = arm_summary(a, [r for r in by_arm[a] if r.item_id in by_id], by_id, seed=seed)
        if label_info is not None:
            summary = summary.model_copy(update={"gold": gold_agreement(by_arm[a], {k: gold_by_id[k] for k in by_id})})
        results.append(summary)
    label_arm = (arm_summary("verifier", by_arm["verifier"], gold_by_id, seed=seed)
                 if label_info is not None and "verifier" in by_arm else None)
    return CompareSummary(
        items=len(items), label_kinds=dict(sorted(kinds.items())), arms=list(arms), repeats=repeats,
        orders=list(orders), seed=seed, timeout_s=timeout_s, config_hash=config_hash, source=source,
        dropped_reserved=dropped_reserved, results=results,
        routing_gap=routing_gap({a: [r for r in by_arm[a] if r.item_id in by_id] for a in ranked}, by_id),
        timings=dict(timings or {}), label_source=label_source, labels=label_info, label_arm=label_arm)


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 6)


def _int(value: float | None) -> int | None:
    return None if value is None else int(value)
