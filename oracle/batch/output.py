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
from typing import Any, Iterable, Iterator


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
    """Cut a partial last line, drop unreadable lines, and return the keys already finished."""
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
    bad = False
    for row in iter_rows(path, on_bad=lambda: None):
        if row is None:
            bad = True
            continue
        done[row["key"]] += 1
    if bad:
        _rewrite_without_bad_lines(path)
    return done


def iter_rows(path: str | Path, on_bad: Any = None) -> Iterator[dict[str, Any] | None]:
    """Rows of an output file; an unreadable line yields None when ``on_bad`` is given."""
    with Path(path).open("rb") as fh:
        for raw in fh:
            if not raw.strip():
                continue
            try:
                row = json.loads(raw)
                if not isinstance(row, dict) or "key" not in row:
                    raise ValueError("not a row")
            except ValueError:
                if on_bad is None:
                    raise
                yield None
                continue
            yield row


def _rewrite_without_bad_lines(path: Path) -> None:
    tmp = path.with_suffix(path.suffix + ".tmp")
    with path.open("rb") as src, tmp.open("wb") as dst:
        for raw in src:
            try:
                row = json.loads(raw)
                if isinstance(row, dict) and "key" in row:
                    dst.write(raw)
            except ValueError:
                continue
        dst.flush()
        os.fsync(dst.fileno())
    os.replace(tmp, path)
