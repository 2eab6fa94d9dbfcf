"""Prior hardness from earlier results: the share of a task's past evaluations that went badly.

Read from result JSONL files (what ``oracle evaluate --json`` and ``oracle batch`` write). A row
counts as hard when its status is not ok or it raised an escalation request. The router reads
the value as the ``prior_hardness`` signal; it never changes the history itself.
"""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path
from typing import Iterable, Mapping

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
        if row.get("status") != "ok" or row.get("escalation"):
            hard[task_id] += 1
    return {k: hard[k] / n for k, n in seen.items()}


def load_history(path: str | Path) -> dict[str, float]:
    """Read a results JSONL file into a hardness map; a bad line is an error naming the line."""
    rows = []
    with Path(path).open(encoding="utf-8") as fh:
        for number, line in enumerate(fh, start=1):
            if not line.strip():
                continue
            try:
                rows.append(json.loads(line))
            except json.JSONDecodeError as exc:
                raise TaskValidationError(f"history: invalid JSON ({exc.msg})", field="(history)",
                                          line=number, source=str(path)) from None
    return hardness_from_rows(rows)
