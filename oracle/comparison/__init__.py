"""Research comparisons: every evaluator on a labelled set, side by side (``oracle compare``).

Public: this package's names, ``api`` (``compare``, ``acompare``, ``CompareResult``) and what a
result holds, ``summary`` (``CompareSummary``, per-arm agreement, intervals, kappa, stability) and
``records`` (``RunRecord``, one line of ``runs.jsonl``). Private, one job each: ``_labels`` (the
labelled format, checked up front), ``_importers`` and ``_reserved`` (the shared data's formats;
reserved records dropped), ``_plan`` (items, seeded limit, run keys, manifest), ``_arms`` (what
each evaluator can judge, running it once), ``_baseline`` (the no-model arm), ``_runner``
(crash-safe, resumable runs), ``_metrics``, ``_rubrics`` (rubric overlays per item), ``_table``
and ``_report`` (terminal table, self-contained HTML).
"""

from __future__ import annotations

from oracle.comparison.api import CompareResult, acompare, compare
from oracle.comparison._labels import Label, LabelledItem, load_labelled
from oracle.comparison.summary import ArmSummary, CompareSummary

__all__ = ["ArmSummary", "CompareResult", "CompareSummary", "Label", "LabelledItem", "acompare", "compare",
           "load_labelled"]
