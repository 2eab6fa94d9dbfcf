"""Calibration files: per-model decision thresholds fitted against labels, with their evidence.

A calibration file is JSON. Version 1 (still read)::

    {"version": 1, "evaluator": "decision_judge",
     "models": {"<model name>": {"pass_threshold": 0.62,
                                 "evidence": {"dataset": "...", "n": 120, "agreement": 0.81}}}}

Version 2 (written by ``oracle calibrate``) adds, per model, one fitted cell per question kind
(``criteria``, ``likelihood``: threshold, Platt/isotonic map, ``min_confidence``, before/after
metrics on held-out folds) and a file-level ``evidence`` block (data set hash, n, fold scheme,
date, tool version, the rubric hashes the run used, pooled metrics). A model's ``pass_threshold``
is its ``criteria`` cell's threshold, else its ``likelihood`` cell's.

Why a file and not a config number: a threshold is only right for the model it was fitted on, so it
is keyed by model, and it carries the evidence it came from. The file's sha256 goes into every
result that used it, so a verdict can be traced to the exact thresholds behind it.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from oracle._internal.safe_files import write_atomic
from oracle.errors import ConfigError


class ModelCalibration(BaseModel):
    """The fitted threshold for one model and what it was fitted on."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    pass_threshold: float = Field(ge=0, le=1)
    """P(yes) a criterion must reach to count as met, for this model."""
    evidence: dict[str, Any] = Field(default_factory=dict)
    """How the threshold was obtained: data set, item count, agreement, date."""


class CalibrationCell(BaseModel):
    """One fitted (model, question kind) cell of a version 2 file."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    n: int = Field(ge=1)
    pass_threshold: float = Field(ge=0, le=1)
    platt: dict[str, float]
    isotonic: dict[str, list[float]] | None = None
    min_confidence: float | None = Field(default=None, ge=0, le=1)
    before: dict[str, Any]
    after: dict[str, Any]
    reliability: dict[str, Any] = Field(default_factory=dict)
    warnings: list[str] = Field(default_factory=list)


class ModelCalibrationV2(ModelCalibration):
    kinds: dict[str, CalibrationCell] = Field(default_factory=dict)
    refused: dict[str, str] = Field(default_factory=dict)
    """Question kind -> why that cell was not fitted (one class, constant probabilities)."""


class CalibrationFile(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    version: Literal[1] = 1
    evaluator: Literal["decision_judge"] = "decision_judge"
    models: dict[str, ModelCalibration] = Field(min_length=1)


class CalibrationFileV2(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    version: Literal[2] = 2
    evaluator: Literal["decision_judge"] = "decision_judge"
    models: dict[str, ModelCalibrationV2]
    evidence: dict[str, Any]


@dataclass(frozen=True)
class LoadedCalibration:
    """A parsed calibration file plus where it came from and the hash of its bytes."""

    path: str
    sha256: str
    file: CalibrationFile | CalibrationFileV2

    def threshold_for(self, model: str) -> float | None:
        entry = self.file.models.get(model)
        return entry.pass_threshold if entry is not None else None

    def min_confidence_for(self, model: str, kind: str) -> float | None:
        """The fitted review cut for a model's question kind (version 2 files only)."""
        entry = self.file.models.get(model)
        cell = entry.kinds.get(kind) if isinstance(entry, ModelCalibrationV2) else None
        return cell.min_confidence if cell is not None else None


def load_calibration(path: str | Path) -> LoadedCalibration:
    """Read and validate a calibration file; any problem is a ConfigError naming the file."""
    p = Path(path)
    try:
        raw = p.read_bytes()
    except OSError as exc:
        raise ConfigError(f"decision_judge.calibration_file: cannot read {p}: {exc.strerror}") from None
    from oracle._internal.safe_json import JsonInputError, loads_checked

    try:
        data = loads_checked(raw)
    except JsonInputError as exc:
        raise ConfigError(f"decision_judge.calibration_file: {p}: {exc}") from None
    try:
        version = data.get("version", 1) if isinstance(data, dict) else 1
        if isinstance(version, bool) or version not in (1, 2):
            raise ConfigError(f"decision_judge.calibration_file: {p}: version: 1 or 2, "
                              f"not {ascii(version)[:40]}")
        parsed: CalibrationFile | CalibrationFileV2 = (
            CalibrationFileV2.model_validate(data) if version == 2 else CalibrationFile.model_validate(data))
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(x) for x in first["loc"]) or "(root)"
        raise ConfigError(f"decision_judge.calibration_file: {p}: {where}: {first['msg']}") from None
    return LoadedCalibration(path=str(p), sha256=hashlib.sha256(raw).hexdigest(), file=parsed)


def write_calibration(path: str | Path, calibration: CalibrationFile | CalibrationFileV2) -> str:
    """Write a calibration file (stable key order); returns its sha256."""
    text = json.dumps(calibration.model_dump(mode="json"), indent=2, sort_keys=True) + "\n"
    write_atomic(path, text)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()
