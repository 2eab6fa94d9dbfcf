"""Run the decision judge over labelled items and read (model, kind, probability, label) points.

Two kinds of point, matching the two things a threshold decides:

- ``criteria``: a candidate with a ``passed`` label, judged on the task's criteria. The judge
  passes a candidate when EVERY criterion's P(yes) reaches the threshold, so the number that
  meets the threshold is the smallest P(yes) over its criteria.
- ``likelihood``: a yes/no question (a likelihood question, or a choice between exactly ``yes``
  and ``no``) with an ``answers`` label; the point is P(yes), the label is whether the right
  answer is yes.

The model is the one that ANSWERED (from the result's provenance), so a server that substitutes a
model is fitted separately from the one requested. Anything else (another question type, an
unparsed answer, a failed call) gives no point and is counted, never guessed; every input item is
accounted for (``Collected.items``: answered, failed, unparsed, not a yes/no question, ...), and a
failed item's error is kept, so a calibration that fits nothing says why.

The first item whose model endpoint on this machine is not running stops the collection
(oracle/batch/halt.py): ``collect`` raises ``EndpointUnreachable`` with the hint.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any, Sequence

from oracle.comparison._labels import LabelledItem
from oracle.config.model import OracleConfig, member_labels
from oracle.tasks.task import TaskInput


@dataclass(frozen=True)
class Point:
    item_id: str
    model: str
    kind: str
    probability: float
    label: int


ERROR_TEXT = 300


@dataclass
class Collected:
    points: list[Point] = field(default_factory=list)
    skipped: dict[str, int] = field(default_factory=dict)
    """Reason -> how many candidates/questions gave no point."""
    rubric_hashes: dict[str, str] = field(default_factory=dict)
    items: dict[str, int] = field(default_factory=dict)
    """What became of each input item: ``answered`` (it gave a point), ``dropped as reserved``,
    its status when the evaluation gave no result (``failed``, ``unparsed``...), else why none of
    its labels gave a point -> how many items."""
    errors: dict[str, int] = field(default_factory=dict)
    """"ErrorType: message" of the items that gave no result -> count, first seen first."""
    config: OracleConfig | None = None
    """The settings the points came from (a decision judge panel fits under its panel key)."""

    def skip(self, reason: str, n: int = 1) -> None:
        self.skipped[reason] = self.skipped.get(reason, 0) + n

    def item(self, outcome: str, n: int = 1) -> None:
        if n:
            self.items[outcome] = self.items.get(outcome, 0) + n

    def account(self) -> str:
        """Every input item in one line: "3 items: 2 failed (first error, 2 times: ...), 1 ..."."""
        total = sum(self.items.values())
        parts = []
        for outcome, n in sorted(self.items.items(), key=lambda kv: (kv[0] != "answered", -kv[1], kv[0])):
            text = f"{n} {outcome}"
            if outcome in ("failed", "unparsed") and self.errors:
                first, count = next(iter(self.errors.items()))
                text += f" (first error, {count} time{'s' * (count != 1)}: {first})"
            parts.append(text)
        return f"{total} item{'s' * (total != 1)}: " + (", ".join(parts) if parts else "none")


def _forced(item: LabelledItem) -> TaskInput:
    task = item.task.model_dump(mode="json")
    task["evaluator"] = "decision_judge"
    return TaskInput.model_validate({"task": task,
                                     "trajectories": [t.model_dump(mode="json") for t in item.trajectories]})


def calibration_model(ev: Any, config: OracleConfig | None = None) -> str:
    """The model a result's points are fitted for: the one that answered; for a decision judge
    panel, the panel's own key (``panel:A+B+...``, the one the judge looks its calibration up by),
    never the first member's model."""
    if ev.provenance.panel and config is not None and config.decision_judge.panel:
        return "panel:" + "+".join(member_labels(config.decision_judge.panel, config.providers))
    answered = list(ev.provenance.models_answered)
    return answered[0] if answered else (ev.provenance.model_requested or "unknown")


def read_points(item: LabelledItem, result: Any, out: Collected) -> None:
    """Points from one evaluation (an OracleResult) of one labelled item."""
    ev = result.result
    if ev is None or not ev.candidates:
        out.skip(f"no result ({result.status.value})")
        out.item(result.status.value)
        error = ev.error if ev is not None else None
        text = f"{error.type}: {error.message}" if error is not None else (
            "the router found no feasible evaluator" if ev is None else "no candidate result")
        text = " ".join(text.split())[:ERROR_TEXT]
        out.errors[text] = out.errors.get(text, 0) + 1
        return
    before, skipped_before = len(out.points), dict(out.skipped)
    _read_candidates(item, ev, result, out)
    if len(out.points) > before:
        out.item("answered")
        return
    new = [reason for reason in out.skipped if out.skipped[reason] > skipped_before.get(reason, 0)]
    out.item(new[0] if new else "no passed or yes/no answers label")


def _read_candidates(item: LabelledItem, ev: Any, result: Any, out: Collected) -> None:
    model = calibration_model(ev, out.config)
    if result.rubric is not None:
        out.rubric_hashes[result.rubric.name] = result.rubric.content_hash
    by_id = {c.id: c for c in ev.candidates}
    for cid, passed in sorted((item.label.passed or {}).items()):
        cand = by_id.get(cid)
        rows = (cand.details.get("criteria") if cand is not None else None) or []
        probs: Any = [r.get("probability") for r in rows]  # a list here, a label -> probability map below
        if not rows or any(p is None for p in probs):
            out.skip("criteria not answered")
            continue
        out.points.append(Point(item.id, model, "criteria", float(min(probs)), int(passed)))
    if item.label.answers and len(ev.candidates) == 1:
        # yes/no: a likelihood question, or a two-option choice whose options are yes and no
        yes_no = {q.id for q in item.task.questions
                  if q.type == "likelihood" or (q.type == "choice" and set(q.labels()) == {"yes", "no"})}
        answers = {q.get("question_id"): q for q in ev.candidates[0].details.get("questions") or []}
        for qid, option in sorted(item.label.answers.items()):
            if qid not in yes_no:
                out.skip("not a yes/no question")
                continue
            got = answers.get(qid)
            probs = (got or {}).get("probabilities") or {}
            if got is None or got.get("unparsed") or "yes" not in probs:
                out.skip("question not answered")
                continue
            out.points.append(Point(item.id, model, "likelihood", float(probs["yes"]), int(option == "yes")))


async def collect(items: Sequence[LabelledItem], config: OracleConfig, *, concurrency: int = 4) -> Collected:
    """Evaluate every item with the decision judge (forced) and gather its points."""
    from oracle._oracle import Oracle

    from oracle.batch.halt import Halt

    out = Collected(config=config)
    gate = asyncio.Semaphore(max(1, concurrency))
    oracle = Oracle(config)
    halt = Halt()

    async def one(item: LabelledItem) -> tuple[LabelledItem, Any]:
        async with gate:
            if halt.stopped:  # the model endpoint is down: ask nothing more
                return item, None
            result = await oracle.evaluate_once(_forced(item))
            error = result.result.error if result.result is not None else None
            halt.keep({"error": error.model_dump() if error is not None else None})
            return item, result

    async with oracle:
        done = await asyncio.gather(*(one(i) for i in items))
    if halt.stopped:
        raise halt.error()
    for item, result in done:
        read_points(item, result, out)
    return out
