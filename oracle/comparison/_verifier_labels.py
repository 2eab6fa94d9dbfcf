"""``--labels verifier``: the verifier's pass/fail per candidate becomes the label the judges are scored on.

Why: on code tasks with tests, execution is a label no judge can argue with, and it costs no
annotation, so "how often does this judge agree with the tests" is measurable on any such set.
The verifier arm produces the labels, so it is left out of the ranking (scored against itself it
would agree every time); its agreement with the gold labels, where the file has them, is reported
instead, and every other arm's agreement with gold is kept alongside.

The label of an item comes from its verifier record of repeat 0 in the given order (the verifier
is deterministic; the other records of the item are its repeats). A candidate with no verdict
(its tests broken, the run failed) gets no label; an item with no labelled candidate is excluded
from every arm's figures and counted under its reason. ``best`` becomes the passing candidates
(none pass: no ``best`` unit); questions and the routing label stay as the file has them.
"""

from __future__ import annotations

from typing import Sequence

from pydantic import BaseModel, ConfigDict, Field

from oracle.comparison._labels import Label, LabelledItem
from oracle.comparison.records import RunRecord

SOURCE_TEXT = "execution: each candidate's label is the verifier's pass/fail on the task's tests"


class LabelSource(BaseModel):
    """Where the labels of a ``--labels verifier`` comparison came from, and what was left out."""

    model_config = ConfigDict(extra="forbid")

    label_source: str = "verifier"
    description: str = SOURCE_TEXT
    items_labelled: int
    items_excluded: int
    excluded_reasons: dict[str, int] = Field(default_factory=dict)
    candidates_labelled: int
    candidates_passed: int
    candidates_unlabelled: int
    """Candidates of labelled items the verifier gave no verdict (left out, not counted as failed)."""
    gold_units: int = 0
    """Candidates with both a gold ``passed`` label and a verifier label."""
    gold_agreement: float | None = None
    """Share of those where the tests agree with the gold label."""


def _reason(record: RunRecord | None) -> str | None:
    if record is None:
        return "no verifier run"
    if record.status == "n/a":
        return f"verifier n/a: {record.reason or 'not applicable'}"
    if record.status == "failed":
        return f"verifier failed: {(record.error or {}).get('type') or 'error'}"
    return None


def verifier_labels(items: Sequence[LabelledItem], records: Sequence[RunRecord]
                    ) -> tuple[list[LabelledItem], LabelSource]:
    """(items relabelled by execution, the label source's account); excluded items are dropped."""
    runs = {r.item_id: r for r in records if r.arm == "verifier" and r.repeat == 0 and r.order == "given"}
    out: list[LabelledItem] = []
    reasons: dict[str, int] = {}
    labelled = passed = unlabelled = gold_n = gold_hits = 0
    for item in items:
        record = runs.get(item.id)
        reason = _reason(record)
        verdicts: dict[str, bool] = {}
        if reason is None and record is not None:
            ids = [t.id for t in item.trajectories]
            verdicts = {cid: bool(v) for cid, v in record.passed.items() if v is not None and cid in ids}
            if not verdicts:
                reason = ("the verifier gave no pass verdict for any candidate (broken tests, or the item's labels "
                          "name no passed candidates)")
        if reason is not None:
            reasons[reason] = reasons.get(reason, 0) + 1
            continue
        labelled += len(verdicts)
        passed += sum(verdicts.values())
        unlabelled += len(item.trajectories) - len(verdicts)
        for cid, gold in (item.label.passed or {}).items():
            if cid in verdicts:
                gold_n += 1
                gold_hits += gold == verdicts[cid]
        best = [cid for cid in [t.id for t in item.trajectories] if verdicts.get(cid)]
        label = Label(passed=verdicts, best=best or None, answers=item.label.answers, evaluator=item.label.evaluator)
        out.append(item.model_copy(update={"label": label}))
    return out, LabelSource(items_labelled=len(out), items_excluded=sum(reasons.values()),
                            excluded_reasons=dict(sorted(reasons.items())), candidates_labelled=labelled,
                            candidates_passed=passed, candidates_unlabelled=unlabelled, gold_units=gold_n,
                            gold_agreement=round(gold_hits / gold_n, 6) if gold_n else None)
