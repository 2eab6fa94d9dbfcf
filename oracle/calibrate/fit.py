"""Fit one calibration cell (one answering model, one question kind) from labelled probabilities.

Pure functions over ``(probability, label)`` pairs. Why each choice:

- The pass threshold maximises Cohen's kappa with the labels, not accuracy: on unbalanced labels a
  threshold that calls everything "pass" has high accuracy and no skill; kappa scores it 0.
- Everything reported as "after" is out of fold: k stratified folds (seeded); each fold's threshold
  and probability map are fitted on the other folds and applied to it, so the figures are what a
  new item would see, not what the fit saw.
- Probability calibration is Platt scaling (logistic regression on the logit), and isotonic
  regression where there is enough data (at least ``ISOTONIC_MIN`` labels): isotonic is more
  flexible and overfits small sets.
- ``min_confidence``: below it a verdict goes to human review. On the judge's own confidence scale
  (``|2p - 1|`` of the raw P(yes)), chosen for a target review rate (that share of verdicts, the
  least confident, is reviewed) or a target precision (the lowest confidence at which verdicts at
  or above it are right that often).
- A cell with one class, or probabilities that never vary, cannot be fitted: it is refused with
  the reason. Fewer than ``SMALL_CELL`` labels: fitted, with a warning in the evidence.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass, field
from typing import Any, Sequence

SMALL_CELL = 30
ISOTONIC_MIN = 200
ECE_BINS = 10


class CellRefused(ValueError):
    """This cell cannot be fitted (the message says why)."""


@dataclass(frozen=True)
class CellFit:
    n: int
    pass_threshold: float
    platt: dict[str, float]
    isotonic: dict[str, list[float]] | None
    min_confidence: float | None
    before: dict[str, Any]
    after: dict[str, Any]
    reliability: dict[str, list[dict[str, float]]]
    warnings: list[str] = field(default_factory=list)


def _kappa(y: Sequence[int], pred: Sequence[int]) -> float:
    from sklearn.metrics import cohen_kappa_score

    if len(set(y)) < 2 and len(set(pred)) < 2:
        return 1.0 if list(y) == list(pred) else 0.0
    value = float(cohen_kappa_score(y, pred))
    return 0.0 if math.isnan(value) else value


def best_threshold(p: Sequence[float], y: Sequence[int]) -> float:
    """The threshold maximising kappa; ties go to the one nearest 0.5 (the uncalibrated default)."""
    cands = sorted(set(p))
    # thresholds between consecutive distinct probabilities, plus the ends
    points = [cands[0]] + [(a + b) / 2 for a, b in zip(cands, cands[1:])] + [min(1.0, cands[-1] + 1e-9)]
    best, best_key = 0.5, (-2.0, 0.0)
    for t in points:
        k = _kappa(y, [int(v >= t) for v in p])
        key = (round(k, 12), -abs(t - 0.5))
        if key > best_key:
            best, best_key = t, key
    return float(best)


def _logit(v: float) -> float:
    v = min(max(v, 1e-6), 1 - 1e-6)
    return math.log(v / (1 - v))


def fit_platt(p: Sequence[float], y: Sequence[int]) -> dict[str, float]:
    from sklearn.linear_model import LogisticRegression

    model = LogisticRegression(C=1e6, solver="lbfgs")
    model.fit([[_logit(v)] for v in p], list(y))
    return {"a": float(model.coef_[0][0]), "b": float(model.intercept_[0])}


def apply_platt(params: dict[str, float], v: float) -> float:
    z = params["a"] * _logit(v) + params["b"]
    return 1 / (1 + math.exp(-z)) if z > -700 else 0.0


def fit_isotonic(p: Sequence[float], y: Sequence[int]) -> dict[str, list[float]]:
    from sklearn.isotonic import IsotonicRegression

    iso = IsotonicRegression(out_of_bounds="clip", y_min=0.0, y_max=1.0).fit(list(p), list(y))
    return {"x": [float(v) for v in iso.X_thresholds_], "y": [float(v) for v in iso.y_thresholds_]}


def apply_isotonic(params: dict[str, list[float]], v: float) -> float:
    import numpy as np

    return float(np.interp(v, params["x"], params["y"]))


def brier(p: Sequence[float], y: Sequence[int]) -> float:
    return sum((a - b) ** 2 for a, b in zip(p, y)) / len(p)


def reliability_bins(p: Sequence[float], y: Sequence[int], bins: int = ECE_BINS) -> list[dict[str, float]]:
    out = []
    for i in range(bins):
        lo, hi = i / bins, (i + 1) / bins
        idx = [j for j, v in enumerate(p) if (lo <= v < hi) or (i == bins - 1 and v == 1.0)]
        if idx:
            out.append({"lo": lo, "hi": hi, "n": float(len(idx)), "mean_p": sum(p[j] for j in idx) / len(idx),
                        "freq": sum(y[j] for j in idx) / len(idx)})
    return out


def ece(p: Sequence[float], y: Sequence[int], bins: int = ECE_BINS) -> float:
    return sum(b["n"] / len(p) * abs(b["mean_p"] - b["freq"]) for b in reliability_bins(p, y, bins))


def _metrics(pred: Sequence[int], prob: Sequence[float], y: Sequence[int]) -> dict[str, float]:
    return {"accuracy": sum(int(a == b) for a, b in zip(pred, y)) / len(y), "kappa": _kappa(y, pred),
            "brier": brier(prob, y), "ece": ece(prob, y)}


def _with_intervals(pred: Sequence[int], prob: Sequence[float], y: Sequence[int], *, seed: int,
                    resamples: int = 1000) -> dict[str, Any]:
    """Verdict metrics (accuracy, kappa) and probability metrics (Brier, ECE), each with a
    percentile bootstrap 95 % interval over items."""
    point = _metrics(pred, prob, y)
    rng = random.Random(seed)
    draws: dict[str, list[float]] = {k: [] for k in point}
    n = len(y)
    for _ in range(resamples):
        idx = [rng.randrange(n) for _ in range(n)]
        m = _metrics([pred[i] for i in idx], [prob[i] for i in idx], [y[i] for i in idx])
        for k, v in m.items():
            draws[k].append(v)
    out: dict[str, Any] = {}
    for k, v in point.items():
        s = sorted(draws[k])
        out[k] = {"value": round(v, 6), "ci95": [round(s[int(0.025 * (len(s) - 1))], 6),
                                                  round(s[int(0.975 * (len(s) - 1))], 6)]}
    return out


def folds(y: Sequence[int], k: int, seed: int) -> list[tuple[list[int], list[int]]]:
    """Stratified folds (fewer when a class has fewer than k members)."""
    from sklearn.model_selection import StratifiedKFold

    k = max(2, min(k, min(sum(y), len(y) - sum(y))))
    skf = StratifiedKFold(n_splits=k, shuffle=True, random_state=seed)
    return [(list(a), list(b)) for a, b in skf.split([[0]] * len(y), list(y))]


def min_confidence_for(conf: Sequence[float], right: Sequence[int], *, review_rate: float | None,
                       target_precision: float | None) -> float | None:
    """The confidence below which verdicts go to review (None when no target is given or reachable)."""
    if review_rate is not None:
        s = sorted(conf)
        cut = int(math.ceil(review_rate * len(s)))
        return float(s[cut - 1]) + 1e-9 if cut > 0 else 0.0
    if target_precision is not None:
        pairs = sorted(zip(conf, right))
        for i, (c, _) in enumerate(pairs):
            kept = [r for _, r in pairs[i:]]
            if kept and sum(kept) / len(kept) >= target_precision:
                return float(c)
        return None
    return None


def fit_cell(p: Sequence[float], y: Sequence[int], *, k: int = 5, seed: int = 0, default_threshold: float = 0.5,
             review_rate: float | None = None, target_precision: float | None = None) -> CellFit:
    """Fit a threshold, a probability map and ``min_confidence``; report before vs after out of fold."""
    p = [float(v) for v in p]
    y = [int(bool(v)) for v in y]
    if len(set(y)) < 2:
        raise CellRefused(f"all {len(y)} labels are {'pass' if y and y[0] else 'fail'}: a threshold cannot be fitted "
                          "on one class")
    if max(p) - min(p) < 1e-9:
        raise CellRefused(f"the model's probability never varies (always {p[0]:.4g}): nothing to calibrate")
    warnings = []
    if len(p) < SMALL_CELL:
        warnings.append(f"only {len(p)} labels (< {SMALL_CELL}): the fit is fragile, its intervals are wide")
    use_iso = len(p) >= ISOTONIC_MIN
    # Out of fold: each held-out item gets the verdict of a threshold fitted on the other folds
    # (on raw probabilities, as the judge applies it) and the probability of a map fitted there.
    oof_pred = [0] * len(p)
    oof_p = [0.0] * len(p)
    for train, test in folds(y, k, seed):
        tp, ty = [p[i] for i in train], [y[i] for i in train]
        t = best_threshold(tp, ty) if len(set(ty)) == 2 else default_threshold
        iso = fit_isotonic(tp, ty) if use_iso and len(set(ty)) == 2 else None
        pl = fit_platt(tp, ty) if iso is None and len(set(ty)) == 2 else None
        for i in test:
            oof_pred[i] = int(p[i] >= t)
            oof_p[i] = apply_isotonic(iso, p[i]) if iso else apply_platt(pl, p[i]) if pl else p[i]
    before = _with_intervals([int(v >= default_threshold) for v in p], p, y, seed=seed)
    after = _with_intervals(oof_pred, oof_p, y, seed=seed)
    platt = fit_platt(p, y)
    iso_all = fit_isotonic(p, y) if use_iso else None
    threshold_raw = best_threshold(p, y)
    # The judge's runtime confidence for a yes/no answer is |2p - 1| of the raw probability (the
    # System One reference formula), so min_confidence is chosen on that scale, against whether the
    # held-out verdict was right.
    conf = [abs(2 * v - 1) for v in p]
    right = [int(a == b) for a, b in zip(oof_pred, y)]
    min_conf = min_confidence_for(conf, right, review_rate=review_rate, target_precision=target_precision)
    if target_precision is not None and min_conf is None:
        warnings.append(f"no confidence level reaches precision {target_precision}: min_confidence not set")
    return CellFit(n=len(p), pass_threshold=round(threshold_raw, 6), platt={k: round(v, 6) for k, v in platt.items()},
                   isotonic=iso_all, min_confidence=None if min_conf is None else round(min_conf, 6),
                   before=before, after=after,
                   reliability={"before": reliability_bins(p, y), "after": reliability_bins(oof_p, y)},
                   warnings=warnings)
