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
unparsed answer, a failed call) gives no point and is counted, never guessed.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any, Sequence

from oracle.comparison._labels import LabelledItem
from oracle.config.model import OracleConfig
from oracle.tasks.task import TaskInput


@dataclass(frozen=True)
class Point:
    item_id: str
    model: str
    kind: str
    probability: float
    label: int


@dataclass
class Collected:
    points: list[Point] = field(default_factory=list)
    skipped: dict[str, int] = field(default_factory=dict)
    """Reason -> how many candidates/questions gave no point."""
    rubric_hashes: dict[str, str] = field(default_factory=dict)

    def skip(self, reason: str, n: int = 1) -> None:
        self.skipped[reason] = self.skipped.get(reason, 0) + n


def _forced(item: LabelledItem) -> TaskInput:
    task = item.task.model_dump(mode="json")
    task["evaluator"] = "decision_judge"
    return TaskInput.model_validate({"task": task,
                                     "trajectories": [t.model_dump(mode="json") for t in item.trajectories]})


def read_points(item: LabelledItem, result: Any, out: Collected) -> None:
    """Points from one evaluation (an OracleResult) of one labelled item."""
    ev = result.result
    if ev is None or not ev.candidates:
        out.skip(f"no result ({result.status.value})")
        return
    answered = list(ev.provenance.models_answered)
    model = answered[0] if answered else (ev.provenance.model_requested or "unknown")
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

    out = Collected()
    gate = asyncio.Semaphore(max(1, concurrency))
    oracle = Oracle(config)

    async def one(item: LabelledItem) -> tuple[LabelledItem, Any]:
        async with gate:
            return item, await oracle.evaluate_once(_forced(item))

    async with oracle:
        for item, result in await asyncio.gather(*(one(i) for i in items)):
            read_points(item, result, out)
    return out
