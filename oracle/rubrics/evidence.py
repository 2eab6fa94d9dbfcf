"""Read the evidence behind a release: a comparison directory or a calibration file.

Both documents record the rubric content hash they ran with, so a release can insist that its
evidence was produced with exactly the draft being frozen. Metrics are flattened to one number per
name (``{"value": 0.8, "ci": [...]}`` becomes ``0.8``) so gates can name them plainly.
"""

from __future__ import annotations

import hashlib
import math
from pathlib import Path
from typing import Any

from oracle.rubrics.errors import RubricError
from oracle.rubrics.model import Evidence


def _number(value: Any, where: str) -> float:
    """A metric as a finite float; anything else (text, a list, 1e999, a 4,000-digit integer) is
    a ``RubricError`` naming it: a gate must never compare against a value we could not read."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise RubricError(f"{where}: not a number ({type(value).__name__})")
    try:
        number = float(value)
    except OverflowError:
        raise RubricError(f"{where}: number too large") from None
    if not math.isfinite(number):
        raise RubricError(f"{where}: not a finite number")
    return number


def _count(value: Any, where: str) -> int | None:
    """An item count the evidence's own summary records (None when it records none)."""
    if value is None:
        return None
    number = _number(value, where)
    if number < 0 or number != int(number):
        raise RubricError(f"{where}: not a count ({number:g})")
    return int(number)


def _flatten(metrics: dict[str, Any], where: str) -> dict[str, float | None]:
    out: dict[str, float | None] = {}
    for key, value in metrics.items():
        if isinstance(value, dict) and "value" in value:
            value = value["value"]
        if isinstance(value, bool):
            continue
        if isinstance(value, (int, float)) or value is None:
            out[key] = None if value is None else _number(value, f"{where}.{key}")
    return out


def _arm_names(doc: dict[str, Any]) -> list[str]:
    if isinstance(doc.get("results"), list):
        return [str(r.get("arm")) for r in doc["results"] if isinstance(r, dict)]
    return sorted(doc["arms"]) if isinstance(doc.get("arms"), dict) else []


def _arm_record(doc: dict[str, Any], arm: str) -> dict[str, Any] | None:
    """One arm's figures: ``oracle compare``'s summary lists them in ``results``."""
    if isinstance(doc.get("results"), list):
        return next((r for r in doc["results"] if isinstance(r, dict) and r.get("arm") == arm), None)
    arms = doc.get("arms")
    record = arms.get(arm) if isinstance(arms, dict) else None
    return record if isinstance(record, dict) else None


def _ece(bins: Any) -> float | None:
    """Expected calibration error from reliability bins (n, mean confidence, accuracy)."""
    if not isinstance(bins, list) or not bins:
        return None
    try:
        total = sum(b["n"] for b in bins)
        value = sum(b["n"] / total * abs(b["mean_confidence"] - b["accuracy"]) for b in bins) if total else None
    except (KeyError, TypeError, OverflowError, ZeroDivisionError):
        return None
    return float(value) if isinstance(value, (int, float)) and math.isfinite(value) else None


def _rubric_hash(doc: dict[str, Any], path: Path, rubric: str | None) -> str:
    hashes = doc.get("rubric_hashes")
    if isinstance(hashes, dict) and hashes:
        for key, value in hashes.items():
            if not (isinstance(value, str) and 0 < len(value) <= 200):
                raise RubricError(f"{path}: rubric_hashes.{ascii(key)[:60]}: not a rubric hash (text)")
        if rubric is not None:
            # keys are the rubric as tasks named it: NAME, NAME@N or NAME@draft
            mine = {str(v) for k, v in hashes.items() if str(k).partition("@")[0] == rubric}
            if len(mine) == 1:
                return mine.pop()
            if len(mine) > 1:
                raise RubricError(f"{path}: the run judged {rubric!r} with several contents; it is evidence for none")
        if len(set(hashes.values())) == 1:
            return str(next(iter(hashes.values())))
        raise RubricError(f"{path}: the run used several rubrics ({', '.join(sorted(hashes))}); "
                          "it is evidence for none")
    value = doc.get("rubric_hash")
    if isinstance(value, str) and 0 < len(value) <= 200:
        return value
    raise RubricError(f"{path}: names no rubric hash: evaluate tasks that name the rubric's draft "
                      "(\"rubric\": \"NAME@draft\") so the run records which rubric it measured")


def read_evidence(path: str | Path, *, arm: str = "routed", rubric: str | None = None) -> Evidence:
    """Evidence from ``oracle compare``'s output directory or from an ``oracle calibrate`` file;
    anything in it we cannot use is a ``RubricError`` naming the file (and the field)."""
    from pydantic import ValidationError

    try:
        return _read_evidence(path, arm=arm, rubric=rubric)
    except ValidationError as exc:
        err = exc.errors()[0]
        raise RubricError(f"evidence {path}: {'.'.join(str(p) for p in err['loc'])}: {err['msg']}") from None


def _read_evidence(path: str | Path, *, arm: str, rubric: str | None) -> Evidence:
    p = Path(path)
    doc_path = p / "summary.json" if p.is_dir() else p
    from oracle._internal.safe_json import JsonInputError, loads_checked

    try:
        raw = doc_path.read_bytes()
        doc = loads_checked(raw)
    except OSError as exc:
        raise RubricError(f"evidence {doc_path}: cannot read: {exc.strerror}") from None
    except JsonInputError as exc:
        raise RubricError(f"evidence {doc_path}: {exc}") from None
    if not isinstance(doc, dict):
        raise RubricError(f"evidence {doc_path}: not a JSON object")
    digest = hashlib.sha256(raw).hexdigest()
    if "results" in doc or "arms" in doc:
        record = _arm_record(doc, arm)
        if record is None:
            raise RubricError(f"evidence {doc_path}: no arm {arm!r} (arms: {', '.join(_arm_names(doc)) or 'none'})")
        metrics = _flatten(record, f"evidence {doc_path}: arm {arm}")
        if "n" in record and "decided" in record:  # labelled verdicts behind the agreement
            metrics["n"] = _number(record["decided"], f"evidence {doc_path}: arm {arm}.decided")
        ece = _ece(record.get("calibration"))
        if ece is not None:
            metrics["ece"] = ece
        answered = _count(record.get("answered_items"), f"evidence {doc_path}: arm {arm}.answered_items")
        return Evidence(kind="compare", path=str(doc_path), sha256=digest, answered_items=answered,
                        rubric_hash=_rubric_hash(doc, doc_path, rubric), metrics=metrics)
    if "models" in doc and "evaluator" in doc:
        ev = doc.get("evidence") or {}
        if not isinstance(ev, dict):
            raise RubricError(f"evidence {doc_path}: 'evidence' is not an object")
        raw_metrics = ev.get("metrics") or {}
        if not isinstance(raw_metrics, dict):
            raise RubricError(f"evidence {doc_path}: evidence.metrics is not an object")
        metrics = _flatten(raw_metrics, f"evidence {doc_path}: evidence.metrics")
        outcomes = ev.get("item_outcomes")
        if outcomes is not None and not isinstance(outcomes, dict):
            raise RubricError(f"evidence {doc_path}: evidence.item_outcomes is not an object")
        answered = (_count(outcomes.get("answered", 0), f"evidence {doc_path}: evidence.item_outcomes.answered")
                    if outcomes is not None else None)
        return Evidence(kind="calibration", path=str(doc_path), sha256=digest, answered_items=answered,
                        rubric_hash=_rubric_hash(ev, doc_path, rubric), metrics=metrics)
    raise RubricError(f"evidence {doc_path}: neither a comparison summary (arms) nor a calibration file (models)")
