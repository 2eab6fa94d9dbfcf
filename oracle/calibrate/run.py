"""``calibrate``: labelled items in, a version 2 calibration file with its evidence out.

Steps: load and check the labels (bad input stops everything before a call), drop records the
shared data reserves, run the decision judge on every item, group the points by answering model
and question kind, fit each cell out of fold (oracle.calibrate.fit), and write the file with the
evidence that justifies it. A cell that cannot be fitted is refused with its reason and left out;
if no cell at all can be fitted, nothing is written (exit 2 on the CLI): never a silent threshold.
"""

from __future__ import annotations

import datetime as _dt
import hashlib
from pathlib import Path
from typing import Any, Sequence

from oracle.calibrate.collect import Collected, Point, collect
from oracle.calibrate.fit import CellRefused, fit_cell
from oracle.config.calibration import CalibrationCell, CalibrationFileV2, ModelCalibrationV2
from oracle.comparison._labels import LabelledItem
from oracle.config.model import OracleConfig
from oracle.errors import OracleError

KIND_PRIORITY = ("criteria", "likelihood")


class CalibrationRefused(OracleError, ValueError):
    """No cell could be fitted; the message lists each cell's reason."""


def drop_reserved(items: Sequence[LabelledItem], data_dir: Path | None) -> tuple[list[LabelledItem], int]:
    """Items whose prompt (or suite id) the shared data reserves are never fitted on."""
    if data_dir is None or not (data_dir / "suite" / "reserved_keys.json").exists():
        return list(items), 0
    from oracle.comparison._reserved import Reserved, suite_pool_key

    reserved = Reserved.load(data_dir)
    kept = []
    for item in items:
        key, humaneval = suite_pool_key(item.id)
        tail = item.id.rpartition("/")[2]
        keys = {key, f"{item.id.rpartition('/')[0].replace('/', ':')}:{tail}"}
        if any(reserved.excludes(pool_key=k) for k in keys if k) or reserved.excludes(
                prompt=item.task.prompt, humaneval_task=humaneval):
            continue
        kept.append(item)
    return kept, len(items) - len(kept)


def dataset_hash(items: Sequence[LabelledItem]) -> str:
    h = hashlib.sha256()
    for item in items:
        h.update(item.model_dump_json().encode())
        h.update(b"\n")
    return h.hexdigest()


def fit_points(collected: Collected, *, config: OracleConfig, k: int, seed: int, review_rate: float | None,
               target_precision: float | None, model: str | None = None) -> dict[str, ModelCalibrationV2]:
    cells: dict[tuple[str, str], list[Point]] = {}
    for p in collected.points:
        if model is None or p.model == model:
            cells.setdefault((p.model, p.kind), []).append(p)
    fitted: dict[str, dict[str, CalibrationCell]] = {}
    refused: dict[str, dict[str, str]] = {}
    for (m, kind), pts in sorted(cells.items()):
        try:
            fit = fit_cell([p.probability for p in pts], [p.label for p in pts], k=k, seed=seed,
                           default_threshold=config.decision_judge.pass_threshold, review_rate=review_rate,
                           target_precision=target_precision)
        except CellRefused as exc:
            refused.setdefault(m, {})[kind] = str(exc)
            continue
        fitted.setdefault(m, {})[kind] = CalibrationCell(
            n=fit.n, pass_threshold=fit.pass_threshold, platt=fit.platt, isotonic=fit.isotonic,
            min_confidence=fit.min_confidence, before=fit.before, after=fit.after, reliability=fit.reliability,
            warnings=fit.warnings)
    models: dict[str, ModelCalibrationV2] = {}
    for m in sorted(set(fitted) | set(refused)):
        kinds = fitted.get(m, {})
        main = next((kinds[k] for k in KIND_PRIORITY if k in kinds), None)
        if main is None:
            continue
        models[m] = ModelCalibrationV2(pass_threshold=main.pass_threshold, kinds=kinds, refused=refused.get(m, {}),
                                       evidence={"n": sum(c.n for c in kinds.values())})
    if not models:
        reasons = "; ".join(f"{m}/{k}: {r}" for m, ks in sorted(refused.items()) for k, r in sorted(ks.items()))
        raise CalibrationRefused("no cell could be fitted: " + (reasons or "no labelled point was answered")
                                 + f" ({collected.account()})")
    return models


def _pooled(models: dict[str, ModelCalibrationV2]) -> dict[str, Any]:
    """The release-gate view: the main cell's held-out ("after") metrics, n-weighted over models."""
    total = 0
    acc: dict[str, float] = {}
    for mc in models.values():
        cell = next(mc.kinds[k] for k in KIND_PRIORITY if k in mc.kinds)
        total += cell.n
        for key, val in cell.after.items():
            acc[key] = acc.get(key, 0.0) + val["value"] * cell.n
    out: dict[str, Any] = {k: round(v / total, 6) for k, v in acc.items()}
    out["agreement"] = out.get("accuracy")
    out["n"] = total
    return out


def cached_config(config: OracleConfig, cache: str | Path | bool | None, *,
                  default_dir: str | Path | None = None) -> OracleConfig:
    """The config calibration runs under: ``cache`` None keeps the config's own cache settings,
    False turns every cache off, a directory caches every provider section there (shared between
    runs), True caches in ``default_dir`` where a section sets no ``cache_path`` of its own. The
    cache file is opened here, so an unusable one stops the run before any model call."""
    from oracle.errors import TaskValidationError
    from oracle.providers._cache import CACHE_FILE, check_cache, config_with_cache

    if cache is None:
        return config
    if cache is False:
        return config_with_cache(config, None, override=True)
    if cache is True:
        if default_dir is None:
            raise TaskValidationError("cache: True needs cache_default_dir (where the calibration file goes)",
                                      field="cache")
        directory = Path(default_dir)
    else:
        directory = Path(cache)
    if directory.exists() and not directory.is_dir():
        raise TaskValidationError(f"--cache: not a directory: {directory}", field="--cache")
    check_cache(directory / CACHE_FILE)
    return config_with_cache(config, directory / CACHE_FILE, override=cache is not True)


async def acalibrate(items: Sequence[LabelledItem], config: OracleConfig, *, model: str | None = None, k: int = 5,
                     seed: int = 0, review_rate: float | None = None, target_precision: float | None = None,
                     data_dir: Path | None = None, source: str | None = None,
                     now: _dt.datetime | None = None, cache: str | Path | bool | None = None,
                     cache_default_dir: str | Path | None = None) -> CalibrationFileV2:
    """Calibrate on ``items``; ``cache``/``cache_default_dir``: the response cache (``cached_config``)."""
    from oracle._internal.version import __version__

    config = cached_config(config, cache, default_dir=cache_default_dir)
    kept, dropped = drop_reserved(items, data_dir)
    collected = await collect(kept, config)
    collected.item("dropped as reserved", dropped)
    models = fit_points(collected, config=config, k=k, seed=seed, review_rate=review_rate,
                        target_precision=target_precision, model=model)
    refused = {m: mc.refused for m, mc in models.items() if mc.refused}
    warnings = {f"{m}/{k}": c.warnings for m, mc in models.items() for k, c in mc.kinds.items() if c.warnings}
    evidence: dict[str, Any] = {
        "dataset": source, "dataset_sha256": dataset_hash(kept), "items": len(kept), "reserved_dropped": dropped,
        "points": len(collected.points), "skipped": collected.skipped, "item_outcomes": collected.items,
        "fold_scheme": {"kind": "stratified k-fold, out of fold", "k": k, "seed": seed},
        "model_requested": (config.providers.decision.model if config.providers.decision
                            else config.providers.judge.model),
        "models_answered": sorted({p.model for p in collected.points}),
        "review_target": {"review_rate": review_rate, "target_precision": target_precision},
        "date": (now or _dt.datetime.now(_dt.timezone.utc)).isoformat(timespec="seconds"),
        "tool_version": __version__, "refused_cells": refused, "warnings": warnings, "metrics": _pooled(models),
    }
    if collected.rubric_hashes:
        evidence["rubric_hashes"] = dict(sorted(collected.rubric_hashes.items()))
    return CalibrationFileV2(models=models, evidence=evidence)


def reliability_png(cal: CalibrationFileV2, path: Path) -> Path | None:
    """A reliability diagram (before vs after, per cell) as PNG; None without matplotlib."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    cells = [(m, k, c) for m, mc in cal.models.items() for k, c in mc.kinds.items()]
    fig, axes = plt.subplots(1, len(cells), figsize=(4.2 * len(cells), 4), squeeze=False)
    for ax, (m, kind, cell) in zip(axes[0], cells):
        ax.plot([0, 1], [0, 1], color="#999", linestyle="--", linewidth=1)
        for key, colour in (("before", "#c0504d"), ("after", "#1f77b4")):
            bins = cell.reliability.get(key) or []
            ax.plot([b["mean_p"] for b in bins], [b["freq"] for b in bins], marker="o", color=colour,
                    label=f"{key} (ECE {cell.__getattribute__(key)['ece']['value']:.3f})")
        ax.set_title(f"{m} / {kind} (n={cell.n})", fontsize=9)
        ax.set_xlabel("predicted P(yes)")
        ax.set_ylabel("observed frequency")
        ax.set_xlim(0, 1)
        ax.set_ylim(0, 1)
        ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path
