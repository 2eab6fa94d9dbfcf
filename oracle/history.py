"""Prior hardness from earlier results: the share of a task's past evaluations that went badly.

Read from result JSONL files (what ``oracle evaluate --json`` and ``oracle batch`` write). A row
counts as hard when its status is not ok or it raised an escalation request. The router reads
the value as the ``prior_hardness`` signal; it never changes the history itself.
"""

from __future__ import annotations

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
    """Read a results JSONL file into a hardness map; a bad line is an error naming the line.

    The file is user input like a task file: missing, a directory, binary, or a line that is not
    a JSON object are all ``TaskValidationError`` (exit 2), never an internal error.
    """
    from oracle.limits import DEFAULT_LIMITS
    from oracle.task_file import check_input_file, decode_json, read_lines

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
