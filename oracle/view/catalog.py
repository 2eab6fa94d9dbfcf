"""The viewer's entries: one per result row (or stored escalation), with the fields the list filters on.

Why a flat list record (``ListRow``) apart from the whole entry: the task list of 10,000 rows travels
to the browser as these small records only (a few hundred bytes each); a task's full result, its
input and its trace are read only when its page is opened.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

SEARCH_CHARS = 400
"""How much of the prompt the list's text search sees (the task id, evaluator and reason always)."""


@dataclass(slots=True)
class Entry:
    """One task's verdict as the viewer shows it."""

    key: str
    """Unique in this viewer: ``r<N>`` for a result row, ``s<N>`` for a stored request with no row."""
    source: str
    """Where it came from: ``file:line`` or ``store``."""
    row: dict[str, Any]
    """The row in the one row schema (oracle/batch/rows.py); its ``result`` is the OracleResult."""
    item: dict[str, Any] | None = None
    """The task input (``task`` and ``trajectories``), when a task file or the store holds it."""
    stored: dict[str, Any] | None = None
    """The escalation store's entry for this row's request (state, answer), when a store is given."""

    @property
    def result(self) -> dict[str, Any] | None:
        value = self.row.get("result")
        return value if isinstance(value, dict) else None

    @property
    def evaluation(self) -> dict[str, Any] | None:
        res = self.result
        value = res.get("result") if res else None
        return value if isinstance(value, dict) else None

    @property
    def escalation(self) -> dict[str, Any] | None:
        res = self.result
        full = res.get("escalation") if res else None
        if isinstance(full, dict):
            return full
        flat = self.row.get("escalation")
        return flat if isinstance(flat, dict) else None

    def list_row(self) -> dict[str, Any]:
        """The small record the task list shows and filters."""
        prompt = ""
        if self.item:
            prompt = str((self.item.get("task") or {}).get("prompt") or "")
        esc = self.escalation
        state = (self.stored or {}).get("state")
        passed = self.row.get("passed")
        return {"key": self.key, "task_id": str(self.row.get("task_id") or ""), "source": self.source,
                "evaluator": self.row.get("evaluator") or "none", "status": str(self.row.get("status") or "unknown"),
                "passed": "passed" if passed is True else "failed" if passed is False else "no verdict",
                "escalated": "escalated" if esc else "not escalated",
                "reason": (esc or {}).get("reason") or "", "state": state or "",
                "score": self.row.get("score"), "best": list(self.row.get("best") or []),
                "prompt": prompt[:SEARCH_CHARS]}


@dataclass(slots=True)
class CompareFolder:
    """One ``oracle compare -o DIR`` folder."""

    key: str
    path: str
    summary: dict[str, Any] | None
    records: list[dict[str, Any]]
    plots: dict[str, str]
    """Plot name -> the report's SVG, as it was written in report.html."""


@dataclass(slots=True)
class Catalog:
    """Everything ``oracle view`` was given, read and checked before the server starts."""

    entries: list[Entry] = field(default_factory=list)
    compares: list[CompareFolder] = field(default_factory=list)
    store_path: str | None = None

    by_key: dict[str, Entry] = field(default_factory=dict)

    def index(self) -> None:
        """Index the entries by key (after loading; the catalog does not change while served)."""
        self.by_key = {e.key: e for e in self.entries}

    def entry(self, key: str) -> Entry | None:
        return self.by_key.get(key)

    def by_task_id(self, task_id: str) -> list[Entry]:
        return [e for e in self.entries if e.row.get("task_id") == task_id]
