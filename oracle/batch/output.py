"""The output side: crash-safe JSONL appends and reading back what an earlier run finished.

A row counts as written once it is flushed and fsynced. Rows are written in groups (every row the
engine finished since the last write, then one fsync), which keeps the guarantee and the speed.
A process killed mid-write leaves at most one partial last line; ``prepare_output`` cuts it off
before the rerun appends, so every line in the file is a whole row.
"""

from __future__ import annotations

import json
import os
from collections import Counter
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, overload

from oracle._internal.safe_files import create_exclusive


class RowWriter:
    """Appends JSON rows; ``write`` returns after the bytes are on disk."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._fh = self.path.open("ab")
        self.rows = 0

    def write(self, rows: Iterable[dict[str, Any]]) -> int:
        data = b"".join(json.dumps(r, sort_keys=True, separators=(",", ":"), default=str).encode() + b"\n"
                        for r in rows)
        if not data:
            return 0
        self._fh.write(data)
        self._fh.flush()
        os.fsync(self._fh.fileno())
        n = data.count(b"\n")
        self.rows += n
        return n

    def close(self) -> None:
        if not self._fh.closed:
            self._fh.close()


def prepare_output(path: str | Path) -> Counter[str]:
    """Cut a partial last line, drop unreadable lines and repeated rows, return the keys finished.

    A key has at most one row: a repeat (left by two runs that wrote the same output before the
    output lock existed, or by a hand-made merge) is dropped here, keeping the first, so a resume
    both de-duplicates and never computes a line that already has a row.
    """
    path = Path(path)
    done: Counter[str] = Counter()
    if not path.exists():
        return done
    with path.open("r+b") as fh:
        data = fh.read()
        cut = data.rfind(b"\n") + 1
        if cut < len(data):
            fh.truncate(cut)
            fh.flush()
            os.fsync(fh.fileno())
    dirty = False
    for row in iter_rows(path, on_bad=lambda: None):
        if row is None or done[row["key"]]:
            dirty = True
            continue
        done[row["key"]] += 1
    if dirty:
        _rewrite_clean(path)
    return done


@overload
def iter_rows(path: str | Path, on_bad: None = None) -> Iterator[dict[str, Any]]: ...
@overload
def iter_rows(path: str | Path, on_bad: Callable[[], Any]) -> Iterator[dict[str, Any] | None]: ...


def iter_rows(path: str | Path, on_bad: Any = None) -> Iterator[dict[str, Any] | None]:
    """Rows of an output file; an unreadable line yields None when ``on_bad`` is given."""
    with Path(path).open("rb") as fh:
        for raw in fh:
            if not raw.strip():
                continue
            try:
                row = json.loads(raw)
                if not isinstance(row, dict) or not isinstance(row.get("key"), str):
                    raise ValueError("not a row")
            except ValueError:
                if on_bad is None:
                    raise
                yield None
                continue
            yield row


def _rewrite_clean(path: Path) -> None:
    """Rewrite keeping only whole rows, the first row of each key; atomic (temp file + replace)."""
    tmp = path.with_suffix(path.suffix + ".tmp")
    seen: set[str] = set()
    try:
        os.unlink(tmp)  # a crash's leftover, or a link planted there: removed, never written through
    except FileNotFoundError:
        pass
    with path.open("rb") as src, os.fdopen(create_exclusive(tmp), "wb") as dst:
        for raw in src:
            try:
                row = json.loads(raw)
            except ValueError:
                continue
            if isinstance(row, dict) and isinstance(row.get("key"), str) and row["key"] not in seen:
                seen.add(row["key"])
                dst.write(raw)
        dst.flush()
        os.fsync(dst.fileno())
    os.replace(tmp, path)
