"""Prior hardness from earlier results: the share of a task's past evaluations that went badly.

Two sources. Result JSONL files (what ``oracle evaluate --json`` and ``oracle batch`` write), keyed
by task id (``--history``). And the outcome log in the escalation store, keyed by the task's
content hash, so an edited task starts afresh and two tasks that share an id never mix; an Oracle
opts in with ``learn_history=True`` (``oracle batch`` does when it has a store). An evaluation
counts as hard when its status is not ok or it raised an escalation request. The router reads the
value as the ``prior_hardness`` signal; routing never changes the history itself.
"""

from __future__ import annotations

import dataclasses
from collections import defaultdict
from pathlib import Path
from typing import Any, Iterable, Mapping

from pydantic import BaseModel, ConfigDict

from oracle.routing.route import HistoryRef, Route

from oracle.errors import TaskValidationError


def hardness_from_rows(rows: Iterable[Mapping]) -> dict[str, float]:
    """task id -> share (0..1) of its rows that failed, were not ok, or escalated."""
    seen: dict[str, int] = defaultdict(int)
    hard: dict[str, int] = defaultdict(int)
    for row in rows:
        task_id = row.get("task_id")
        if not task_id:
            continue
        seen[task_id] += 1
        if is_hard(str(row.get("status")), bool(row.get("escalation"))):
            hard[task_id] += 1
    return {k: hard[k] / n for k, n in seen.items()}


def load_history(path: str | Path) -> dict[str, float]:
    """Read a results JSONL file into a hardness map; a bad line is an error naming the line.

    The file is user input like a task file: missing, a directory, binary, or a line that is not
    a JSON object are all ``TaskValidationError`` (exit 2), never an internal error.
    """
    from oracle.tasks._limits import DEFAULT_LIMITS
    from oracle.tasks.files import check_input_file, decode_json, read_lines

    path = check_input_file(path)
    rows = []
    with path.open("rb") as fh:
        for number, raw, size, _ in read_lines(fh, DEFAULT_LIMITS.max_file_bytes, digest=False):
            if size > DEFAULT_LIMITS.max_file_bytes:
                raise TaskValidationError(f"history: line is {size} bytes, past limits.max_file_bytes",
                                          field="(history)", line=number, source=str(path))
            try:
                row = decode_json(raw, source=str(path), line=number)
            except TaskValidationError as exc:
                raise TaskValidationError(f"history: {str(exc).split(': ', 1)[-1]}", field="(history)",
                                          line=number, source=str(path)) from None
            if not isinstance(row, dict):
                raise TaskValidationError("history: each line must be a result object", field="(history)",
                                          line=number, source=str(path))
            rows.append(row)
    return hardness_from_rows(rows)


# -- the history that learns: outcomes by task content hash, read through frozen snapshots --------

def is_hard(status: str, escalated: bool) -> bool:
    """The one rule for "this evaluation went badly": not ok, or it raised an escalation request."""
    return status != "ok" or escalated


class HistorySnapshot(BaseModel):
    """Prior hardness per task content hash, frozen: later outcomes never change it."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    ref: HistoryRef
    hardness: dict[str, float]
    """task content hash -> share (0..1) of its recorded evaluations that were hard."""

    @classmethod
    def of(cls, counts: Mapping[str, tuple[int, int]], through_seq: int) -> "HistorySnapshot":
        from oracle._internal.canonical import sha256_json

        ordered = {h: [n, hard] for h, (n, hard) in sorted(counts.items()) if n > 0}
        ref = HistoryRef(hash=sha256_json(ordered), through_seq=through_seq, tasks=len(ordered),
                         evaluations=sum(n for n, _ in ordered.values()))
        return cls(ref=ref, hardness={h: hard / n for h, (n, hard) in ordered.items()})


class HistoryLearning:
    """An Oracle's link to the routing history: a snapshot taken once, when it starts (so every
    route of a batch reads the same history, whatever finishes meanwhile), and the outcome log
    each finished evaluation is appended to.

    ``through_seq`` rebuilds an earlier snapshot exactly (Ray workers use the driver's; a reader
    reproduces a trace from its ``history_snapshot``).
    """

    def __init__(self, store: Any, *, through_seq: int | None = None) -> None:
        self.store = store
        seq = store.last_outcome_seq() if through_seq is None else through_seq
        self.snapshot = HistorySnapshot.of(store.outcome_counts(seq), seq)

    def prior(self, task: Any, explicit: Mapping[str, float] | None) -> Mapping[str, float] | None:
        """The history mapping for one task's route: an explicit entry for its id wins, else the
        snapshot's value for its content hash."""
        if explicit is not None and task.id in explicit:
            return explicit
        value = self.snapshot.hardness.get(task.content_hash())
        return explicit if value is None else {task.id: value}

    def stamp(self, route: Route) -> Route:
        """The route with the snapshot it read recorded in its trace."""
        return dataclasses.replace(route, history_snapshot=self.snapshot.ref)

    def record(self, task: Any, result: Any) -> None:
        """Append the outcome of a finished evaluation; a store fault is logged, never raised (the
        verdict is already made and must reach its caller)."""
        from oracle.errors import EscalationStoreError

        esc = result.escalation
        try:
            self.store.record_outcome(task_hash=task.content_hash(), task_id=task.id,
                                      evaluator=result.route.evaluator, status=str(result.status),
                                      escalation=esc.reason if esc is not None else None,
                                      hard=is_hard(str(result.status), esc is not None))
        except EscalationStoreError as exc:
            from oracle._internal.log import get_logger

            get_logger("oracle.history").warning("history_record_failed", task_id=task.id, error=str(exc))
