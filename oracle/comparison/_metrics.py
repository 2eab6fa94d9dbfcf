"""Agreement, intervals, kappa and stability figures: pure functions over run records.

Agreement per label kind (oracle/comparison/_labels.py): ``passed``, each labelled candidate's
would-pass verdict equals its label; ``best``, the arm's top-1 candidate is among the preferred;
``answers``, the chosen option equals the labelled one. A unit without a verdict (abstained,
unparsed, failed) is counted apart, never as wrong and never as right: agreement is over the units
with a verdict, and ``coverage`` says how many those were. A verdict that came after the timeout
is a verdict, and never a correct one.

Intervals are a percentile bootstrap over items (all of an item's repeats, orders and units move
together, since they are not independent), seeded, so the same runs give the same interval.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Iterable, Sequence

import numpy as np

from oracle.comparison._labels import LabelledItem
from oracle.comparison.records import RunRecord

BOOTSTRAP_SAMPLES = 2000
CALIBRATION_BINS = 10


@dataclass(frozen=True)
class Unit:
    """One labelled fact an arm's verdict is scored on."""

    kind: str
    label: Any
    verdict: Any
    """None: no verdict (abstained / unparsed / failed)."""
    confidence: float | None
    late: bool

    @property
    def decided(self) -> bool:
        return self.verdict is not None

    @property
    def correct(self) -> bool:
        return self.decided and not self.late and self.verdict == self.label


def units(record: RunRecord, item: LabelledItem) -> list[Unit]:
    """The units a record is scored on (none for an ``n/a`` record)."""
    if record.status == "n/a":
        return []
    label = item.label
    late = not record.within_timeout
    out: list[Unit] = []
    if "passed" in record.kinds:
        for cid, value in sorted((label.passed or {}).items()):
            out.append(Unit("passed", value, record.passed.get(cid), None, late))
    if "best" in record.kinds and label.best:
        verdict = None if record.top is None else record.top in label.best
        out.append(Unit("best", True, verdict, record.confidence.get("candidates"), late))
    if "answers" in record.kinds:
        for qid, option in sorted((label.answers or {}).items()):
            out.append(Unit("answers", option, record.chosen.get(qid), record.confidence.get(qid), late))
    return out


def agreement(us: Iterable[Unit]) -> float | None:
    decided = [u for u in us if u.decided]
    return sum(u.correct for u in decided) / len(decided) if decided else None


def bootstrap_interval(per_item: Sequence[tuple[int, int]], *, seed: int,
                       samples: int = BOOTSTRAP_SAMPLES) -> tuple[float, float] | None:
    """95 % percentile interval of pooled agreement, resampling items: (correct, decided) pairs."""
    data = np.array([pair for pair in per_item if pair[1] > 0], dtype=float)
    if len(data) == 0:
        return None
    rng = np.random.default_rng(seed)
    picks = rng.integers(0, len(data), size=(samples, len(data)))
    correct = data[:, 0][picks].sum(axis=1)
    decided = data[:, 1][picks].sum(axis=1)
    stats = correct / decided
    low, high = np.percentile(stats, [2.5, 97.5])
    return round(float(low), 6), round(float(high), 6)


def cohen_kappa(pairs: Sequence[tuple[Any, Any]]) -> float | None:
    """Cohen's kappa of (label, verdict) pairs over the categories seen; None when undefined."""
    n = len(pairs)
    if n == 0:
        return None
    categories = sorted({str(x) for pair in pairs for x in pair})
    observed = sum(str(a) == str(b) for a, b in pairs) / n
    expected = sum((sum(str(a) == c for a, _ in pairs) / n) * (sum(str(b) == c for _, b in pairs) / n)
                   for c in categories)
    if math.isclose(expected, 1.0):
        return None
    return round((observed - expected) / (1 - expected), 6)


def percentile(values: Sequence[float], q: float) -> float | None:
    return round(float(np.percentile(np.array(values, dtype=float), q)), 3) if values else None


def stability(records: Sequence[RunRecord]) -> dict[str, Any]:
    """Items whose verdict changed between repeats (same order) and under order reversal."""
    by_item: dict[str, list[RunRecord]] = {}
    for r in records:
        if r.status != "n/a":
            by_item.setdefault(r.item_id, []).append(r)
    repeat_items = repeat_changed = order_items = order_flipped = 0
    for rs in by_item.values():
        by_order: dict[str, dict[int, tuple[Any, ...]]] = {}
        for r in rs:
            by_order.setdefault(r.order, {})[r.repeat] = r.verdict_signature()
        if any(len(v) > 1 for v in by_order.values()):
            repeat_items += 1
            repeat_changed += any(len(set(v.values())) > 1 for v in by_order.values())
        if len(by_order) == 2:
            given, rev = by_order.get("given", {}), by_order.get("reversed", {})
            common = sorted(set(given) & set(rev))
            if common:
                order_items += 1
                order_flipped += any(given[k] != rev[k] for k in common)
    return {"repeat_items": repeat_items, "repeat_changed": repeat_changed,
            "repeat_change_rate": round(repeat_changed / repeat_items, 6) if repeat_items else None,
            "order_items": order_items, "order_flipped": order_flipped,
            "order_flip_rate": round(order_flipped / order_items, 6) if order_items else None}


def calibration(us: Iterable[Unit]) -> list[dict[str, Any]]:
    """Reliability bins of (raw confidence of the chosen option, correct) for probability arms."""
    pairs = [(u.confidence, u.correct) for u in us if u.decided and u.confidence is not None]
    bins: list[dict[str, Any]] = []
    for b in range(CALIBRATION_BINS):
        lo, hi = b / CALIBRATION_BINS, (b + 1) / CALIBRATION_BINS
        inside = [(c, ok) for c, ok in pairs if lo <= c < hi or (b == CALIBRATION_BINS - 1 and c == 1.0)]
        if inside:
            bins.append({"low": lo, "high": hi, "n": len(inside),
                         "mean_confidence": round(sum(c for c, _ in inside) / len(inside), 6),
                         "accuracy": round(sum(ok for _, ok in inside) / len(inside), 6)})
    return bins


def total_or_none(values: Iterable[float | int | None]) -> float | None:
    """A sum that is unknown (None) as soon as one part is unknown: never a silent 0."""
    total = 0.0
    for v in values:
        if v is None:
            return None
        total += v
    return total
