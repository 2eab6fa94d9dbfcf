"""Private: rubric releases (``oracle rubric``), versioned, content-hashed bundles of criteria,
questions and judge settings. A task names one; the result carries its ``RubricRef``.

Drafts change; releases never do. A release is accepted only with evidence (a comparison run or a
calibration) produced with exactly that draft, and only when the evidence passes the configured
gates, or with ``--force``, which the release records. Tasks name ``"rubric": "NAME"`` (the
current release), ``"NAME@N"`` or ``"NAME@draft"``; the result's trace names the release.

Names are imported on first use, so the config (which needs only ``Gate``) stays cheap to load.
"""

from __future__ import annotations

from importlib import import_module
from typing import Any

__all__ = ["Evidence", "Gate", "GateResult", "Release", "RubricContent", "RubricError", "RubricEvidenceTooSmall",
           "RubricGateFailed", "RubricRef", "RubricStore", "RubricTampered", "read_evidence"]

_WHERE = {"Evidence": "model", "Gate": "gates", "GateResult": "gates", "Release": "model",
          "RubricContent": "model", "RubricError": "errors", "RubricEvidenceTooSmall": "errors",
          "RubricGateFailed": "errors", "RubricRef": "model",
          "RubricStore": "store", "RubricTampered": "errors", "read_evidence": "evidence"}


def __getattr__(name: str) -> Any:
    if name in _WHERE:
        return getattr(import_module(f"oracle.rubrics.{_WHERE[name]}"), name)
    raise AttributeError(f"module 'oracle.rubrics' has no attribute {name!r}")
