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
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, overload

from oracle._internal.safe_files import create_exclusive
from oracle.errors import TaskValidationError


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


class ConfigChanged(TaskValidationError):
    """The output holds rows computed under another config than this run's (exit 2)."""


SKIPPED = "skipped"
"""A row not run (a budget ran out): written so every line has its row, never counted as finished."""


def is_skipped(row: dict[str, Any]) -> bool:
    return row.get("status") == SKIPPED


def row_config_hash(row: dict[str, Any]) -> str | None:
    """The config hash a row was computed under: its own field, else (rows written before rows
    carried it) the one its route trace names; None when neither is there."""
    found = row.get("config_hash")
    if isinstance(found, str):
        return found
    result = row.get("result")
    route = result.get("route") if isinstance(result, dict) else None
    found = route.get("config_hash") if isinstance(route, dict) else None
    return found if isinstance(found, str) else None


def _refuse(path: Path, config_hash: str, stale: Counter[str]) -> ConfigChanged:
    rows = sum(stale.values())
    under = ", ".join(f"{n} under config {h}" for h, n in sorted(stale.items()))
    return ConfigChanged(
        f"--output: {path} holds {rows} row(s) computed under another config ({under}); this run's config "
        f"is {config_hash}. Rerun with --recompute to recompute them under {config_hash} (each old row stays "
        "until its new one is written), or write to another output. Nothing was changed.", field="--output")


@dataclass
class Resume:
    """What an output holds for a rerun."""

    done: Counter[str]
    """Keys finished (under the run's config, when one is given)."""
    stale: Counter[str]
    """Config hash -> rows of keys that have no row under the run's config ("none recorded" when a
    row names none): what ``recompute`` computes again."""
    skipped: Counter[str] = field(default_factory=Counter)
    """Keys whose rows (under the run's config) are all ``skipped``: computed again, each old row
    kept until its new one is written (``compact`` then keeps the new one)."""


def scan_output(path: str | Path, *, config_hash: str | None = None, recompute: bool = False) -> Resume:
    """Cut a partial last line, drop unreadable lines and repeated rows, say which keys are finished.

    A key has at most one row: a repeat (left by two runs that wrote the same output before the
    output lock existed, or by a hand-made merge) is dropped here, keeping the first, so a resume
    both de-duplicates and never computes a line that already has a row.

    ``config_hash``: only rows computed under this config count as finished. Rows of another config
    are refused (``ConfigChanged``, raised before anything in the file changes) unless
    ``recompute``: then their keys count as not finished, each old row stays until the rerun
    writes its new one, and ``compact`` keeps the new one. A ``skipped`` row (not run: its budget
    ran out) never counts as finished: a rerun computes exactly those lines (``Resume.skipped``).
    """
    path = Path(path)
    if not path.exists():
        return Resume(Counter(), Counter())
    data = path.read_bytes()
    cut = data.rfind(b"\n") + 1
    hashes: dict[str, list[str | None]] = {}
    ran: set[str] = set()
    """Keys with a row that was run (not skipped) under the run's config (or any, without one)."""
    unreadable = False
    for raw in data[:cut].split(b"\n"):
        if not raw.strip():
            continue
        row = _parse_row(raw)
        if row is None:
            unreadable = True
            continue
        found_hash = row_config_hash(row)
        hashes.setdefault(row["key"], []).append(found_hash)
        if not is_skipped(row) and (config_hash is None or found_hash == config_hash):
            ran.add(row["key"])
    stale: Counter[str] = Counter()
    if config_hash is not None:
        stale.update((found[0] or "none recorded") for found in hashes.values() if config_hash not in found)
    if stale and not recompute:
        raise _refuse(path, config_hash or "", stale)
    if cut < len(data):
        with path.open("r+b") as fh:
            fh.truncate(cut)
            fh.flush()
            os.fsync(fh.fileno())
    done = Counter(key for key in hashes if key in ran)
    skipped = Counter(key for key, found in hashes.items()
                      if key not in ran and (config_hash is None or config_hash in found))
    if unreadable or any(len(found) > 1 for found in hashes.values()):
        _rewrite_clean(path, prefer=config_hash)
    return Resume(done, stale, skipped)


def prepare_output(path: str | Path, *, config_hash: str | None = None, recompute: bool = False) -> Counter[str]:
    """``scan_output``'s finished keys (the resume set)."""
    return scan_output(path, config_hash=config_hash, recompute=recompute).done


def compact(path: str | Path, config_hash: str) -> None:
    """After a ``recompute`` run or a rerun of skipped rows: one row per key again, the one computed
    under ``config_hash`` where there is one, a row that ran over a skipped one, the latest of two
    skipped ones (atomic; nothing is rewritten when every key already has one row)."""
    path = Path(path)
    if not path.exists():
        return
    keys: Counter[str] = Counter(row["key"] for row in iter_rows(path, on_bad=lambda: None) if row is not None)
    if any(n > 1 for n in keys.values()):
        _rewrite_clean(path, prefer=config_hash)


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
            row = _parse_row(raw)
            if row is None:
                if on_bad is None:
                    raise ValueError(f"{path}: a line that is not a row: {raw[:80]!r}")
                yield None
                continue
            yield row


def _parse_row(raw: bytes) -> dict[str, Any] | None:
    """A line as a row (a JSON object with a text ``key``), or None."""
    try:
        row = json.loads(raw)
    except ValueError:
        return None
    return row if isinstance(row, dict) and isinstance(row.get("key"), str) else None


def _rewrite_clean(path: Path, prefer: str | None = None) -> None:
    """Rewrite keeping only whole rows, one row per key: the first one computed under ``prefer``
    when a key has one, else its first row, a row that ran before a skipped one (the latest of
    skipped ones); atomic (temp file + replace), in the file's order."""
    tmp = path.with_suffix(path.suffix + ".tmp")
    chosen: dict[str, tuple[int, tuple[bool, bool]]] = {}
    """key -> (position of the row kept, its rank: under ``prefer``, was run)."""
    for n, row in enumerate(iter_rows(path, on_bad=lambda: None)):
        if row is None:
            continue
        rank = (prefer is not None and row_config_hash(row) == prefer, not is_skipped(row))
        held = chosen.get(row["key"])
        if held is None or rank > held[1] or (rank == held[1] and not rank[1]):
            chosen[row["key"]] = (n, rank)
    keep = {n for n, _ in chosen.values()}
    try:
        os.unlink(tmp)  # a crash's leftover, or a link planted there: removed, never written through
    except FileNotFoundError:
        pass
    with path.open("rb") as src, os.fdopen(create_exclusive(tmp), "wb") as dst:
        n = 0
        for raw in src:
            if not raw.strip():
                continue
            if n in keep:
                dst.write(raw if raw.endswith(b"\n") else raw + b"\n")
            n += 1
        dst.flush()
        os.fsync(dst.fileno())
    os.replace(tmp, path)
