"""Research comparisons: every evaluator on a labelled set, side by side (``oracle compare``).

Modules, one job each: ``labels`` (the labelled format, checked up front), ``importers`` and
``reserved`` (the shared data's formats; reserved records dropped), ``plan`` (items, seeded limit,
run keys, manifest), ``arms`` (what each evaluator can judge, running it once), ``baseline`` (the
no-model arm), ``runner`` (crash-safe, resumable runs), ``metrics`` and ``summary`` (agreement,
intervals, kappa, stability), ``table`` and ``report`` (terminal table, self-contained HTML).
"""

from __future__ import annotations

from oracle.comparison.api import CompareResult, acompare, compare
from oracle.comparison.labels import Label, LabelledItem, load_labelled
from oracle.comparison.summary import ArmSummary, CompareSummary

__all__ = ["ArmSummary", "CompareResult", "CompareSummary", "Label", "LabelledItem", "acompare", "compare",
           "load_labelled"]
