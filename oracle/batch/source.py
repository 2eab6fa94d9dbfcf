"""The input side of a batch: every non-blank JSONL line becomes one entry, valid or not.

Lines are read lazily, so memory does not grow with the file. Each entry carries its resume key:
``task_id:hash`` for a valid task (hash over ``Task.content_hash()`` and the trajectories, so a
changed candidate is re-evaluated) and ``invalid:line:hash`` for a line that failed validation.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Iterator

from oracle._canonical import sha256_json, sha256_text
from oracle.errors import TaskValidationError
from oracle.task import TaskInput
from oracle.task_file import parse_task


@dataclass(frozen=True)
class InputEntry:
    line: int
    """1-based line number in the input file."""
    key: str
    task_id: str | None
    """None when the line could not be parsed far enough to read an id."""
    item: TaskInput | None = None
    error: TaskValidationError | None = None
    raw: str | None = None
    """The raw line, kept only for invalid entries and engines that ship lines to workers."""


def task_key(item: TaskInput) -> str:
    digest = sha256_json({"task": item.task.content_hash(),
                          "trajectories": [t.model_dump(mode="json") for t in item.trajectories]})
    return f"{item.task.id}:{digest[:24]}"


def _loose_id(data: object) -> str | None:
    if isinstance(data, dict) and isinstance(data.get("task"), dict):
        value = data["task"].get("id")
        return value if isinstance(value, str) and value else None
    return None


def parse_line(number: int, raw: str, source: str) -> InputEntry:
    """Validate one line; an invalid line still becomes an entry with its error."""
    try:
        data = json.loads(raw)
    except json.JSONDecodeError as exc:
        err = TaskValidationError(f"invalid JSON: {exc.msg} at column {exc.colno}", field="(line)",
                                  line=number, source=source)
        return InputEntry(line=number, key=f"invalid:{number}:{sha256_text(raw)[:16]}", task_id=None,
                          error=err, raw=raw)
    try:
        item = parse_task(data, source=source, line=number)
    except TaskValidationError as err:
        return InputEntry(line=number, key=f"invalid:{number}:{sha256_text(raw)[:16]}",
                          task_id=_loose_id(data), error=err, raw=raw)
    return InputEntry(line=number, key=task_key(item), task_id=item.task.id, item=item)


def iter_entries(path: str | Path) -> Iterator[InputEntry]:
    """Entries in file order. The n-th repeat of identical content gets ``#n`` on its key, so
    duplicate lines each get their own row and a resumed run matches them one to one."""
    path = Path(path)
    seen: dict[str, int] = {}
    with path.open("r", encoding="utf-8") as fh:
        for number, raw in enumerate(fh, start=1):
            if raw.strip():
                entry = parse_line(number, raw, str(path))
                repeat = seen.get(entry.key, 0)
                seen[entry.key] = repeat + 1
                if repeat:
                    entry = replace(entry, key=f"{entry.key}#{repeat}")
                yield entry


def count_entries(path: str | Path) -> int:
    """Number of non-blank lines (one output row each)."""
    with Path(path).open("rb") as fh:
        return sum(1 for raw in fh if raw.strip())
