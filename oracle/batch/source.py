"""The input side of a batch: every non-blank JSONL line becomes one entry, whatever it holds.

Lines are read lazily as bytes, so memory does not grow with the file and a line of invalid UTF-8
is that line's problem, not the file's. An entry is only the raw line and its resume key; it is
parsed later, inside the per-line time budget (``rows.evaluate_entry``), so no line — too deep,
too big, too many candidates — can stop or stall the reading of the others.

Why the key hashes the raw bytes and not the parsed task: a resume must skip every line that has a
row *without parsing it* (parsing is what failed or hung last time), and a changed line must be
computed again. The n-th repeat of identical bytes gets ``#n``, so duplicate lines each get their
own row and a resumed run matches them one to one. A line longer than the size limit is hashed
as it streams past and never held in memory whole.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator

from oracle.errors import TaskValidationError
from oracle.tasks._limits import DEFAULT_LIMITS, InputLimits
from oracle.tasks.task import TaskInput
from oracle.tasks.files import decode_json, parse_task, read_lines

@dataclass(frozen=True)
class InputEntry:
    line: int
    """1-based line number in the input file."""
    key: str
    raw: bytes
    """The line as read; empty when the line was longer than the size limit (see ``size``)."""
    size: int
    """Length of the line in bytes."""
    source: str = "input"


@dataclass(frozen=True)
class ParsedEntry:
    """What a line turned out to be: a task, or the error naming the line and the reason."""

    item: TaskInput | None
    error: TaskValidationError | None
    task_id: str | None
    """The task id when it could be read, even from an invalid task."""


def _loose_id(data: Any) -> str | None:
    if isinstance(data, dict) and isinstance(data.get("task"), dict):
        value = data["task"].get("id")
        return value if isinstance(value, str) and value else None
    return None


def parse_entry(entry: InputEntry, limits: InputLimits | None = None) -> ParsedEntry:
    """Decode and validate one line; never raises (every failure is the line's error)."""
    limits = limits or DEFAULT_LIMITS
    if entry.size > limits.max_file_bytes:
        return ParsedEntry(None, TaskValidationError(
            f"line is {entry.size} bytes; at most {limits.max_file_bytes} (limits.max_file_bytes)",
            field="(line)", line=entry.line, source=entry.source), None)
    data = None
    try:
        data = decode_json(entry.raw, source=entry.source, line=entry.line)
        # A relative repository path or bundle is the input file's neighbour (files.with_base_dir).
        item = parse_task(data, source=entry.source, line=entry.line, limits=limits,
                          base_dir=Path(entry.source).parent)
    except TaskValidationError as err:
        return ParsedEntry(None, err, _loose_id(data))
    return ParsedEntry(item, None, item.task.id)


def iter_entries(path: str | Path, limits: InputLimits | None = None) -> Iterator[InputEntry]:
    """Entries in file order, one per non-blank line, keyed for resume (see the module docstring)."""
    limits = limits or DEFAULT_LIMITS
    path = Path(path)
    seen: dict[str, int] = {}
    with path.open("rb") as fh:
        for number, raw, size, sha in read_lines(fh, limits.max_file_bytes, digest=True):
            key = sha[:32]
            repeat = seen.get(key, 0)
            seen[key] = repeat + 1
            yield InputEntry(line=number, key=f"{key}#{repeat}" if repeat else key, raw=raw, size=size,
                             source=str(path))


def count_entries(path: str | Path, limits: InputLimits | None = None) -> int:
    """Number of non-blank lines (one output row each)."""
    limits = limits or DEFAULT_LIMITS
    with Path(path).open("rb") as fh:
        return sum(1 for _ in read_lines(fh, limits.max_file_bytes, digest=False))


def entry_to_wire(entry: InputEntry) -> tuple[int, str, bytes, int, str]:
    """Plain values for shipping an entry to another process (the Ray engine)."""
    return entry.line, entry.key, entry.raw, entry.size, entry.source


def entry_from_wire(values: tuple[int, str, bytes, int, str]) -> InputEntry:
    line, key, raw, size, source = values
    return InputEntry(line=line, key=key, raw=raw, size=size, source=source)


