"""A SQLite file holding escalation requests until a person answers them.

Why SQLite in WAL mode: several processes (a batch run filing requests, a reviewer answering them,
``oracle resume`` applying the answers) touch the same file at once, and a request must survive a
crash or a restart. WAL lets readers and one writer proceed together; every write is its own
transaction, so a killed process leaves either the whole row or none of it.

A row keeps everything a later process needs to resume: the request, the task input as given, the
first evaluation, and once given the answer and the final result.
"""

from __future__ import annotations

import json
import sqlite3
import threading
import time
from pathlib import Path
from typing import Any, Iterator, Literal

from pydantic import BaseModel, ConfigDict

from oracle.errors import OracleError
from oracle.human import HumanAnswer
from oracle.result import Escalation, OracleResult
from oracle.task import TaskInput

EntryState = Literal["pending", "answered", "resolved"]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS escalations (
    id          TEXT PRIMARY KEY,
    task_id     TEXT NOT NULL,
    reason      TEXT NOT NULL,
    blocking    INTEGER NOT NULL,
    state       TEXT NOT NULL,
    created_at  REAL NOT NULL,
    answered_at REAL,
    resolved_at REAL,
    request     TEXT NOT NULL,
    task_input  TEXT NOT NULL,
    first_result TEXT NOT NULL,
    answer      TEXT,
    choice      TEXT,
    final_result TEXT
);
CREATE INDEX IF NOT EXISTS escalations_state ON escalations(state);
"""


class EscalationNotFound(OracleError, KeyError):
    """No request with that id in the store."""


class StoredEscalation(BaseModel):
    """One row of the store."""

    model_config = ConfigDict(extra="forbid")

    id: str
    task_id: str
    state: EntryState
    created_at: float
    answered_at: float | None = None
    resolved_at: float | None = None
    request: Escalation
    item: TaskInput
    first_result: OracleResult
    answer: HumanAnswer | None = None
    final_result: OracleResult | None = None


class EscalationStore:
    """Pending requests and their answers in one SQLite file (WAL mode); safe across processes."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        self._conn = sqlite3.connect(str(self.path), timeout=30.0, check_same_thread=False,
                                     isolation_level=None)
        self._conn.execute("PRAGMA journal_mode=WAL")
        self._conn.execute("PRAGMA synchronous=FULL")
        self._conn.execute("PRAGMA busy_timeout=30000")
        self._conn.executescript(_SCHEMA)

    def close(self) -> None:
        with self._lock:
            self._conn.close()

    def __enter__(self) -> "EscalationStore":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _write(self, sql: str, params: tuple[Any, ...]) -> int:
        with self._lock:
            cur = self._conn.execute(sql, params)
            return cur.rowcount

    def put(self, request: Escalation, item: TaskInput, first_result: OracleResult) -> bool:
        """File a request; False when the same request (same id) is already stored."""
        first = first_result.model_copy(update={"history": []})
        return self._write(
            "INSERT OR IGNORE INTO escalations (id, task_id, reason, blocking, state, created_at, request,"
            " task_input, first_result) VALUES (?, ?, ?, ?, 'pending', ?, ?, ?, ?)",
            (request.id, item.task.id, request.reason, int(request.blocking), time.time(),
             request.model_dump_json(), item.model_dump_json(), first.model_dump_json())) == 1

    def answer(self, esc_id: str, answer: HumanAnswer) -> StoredEscalation:
        """Record an answer; a choice must be one of the request's options when it has any."""
        entry = self.get(esc_id)
        options = entry.request.options
        if answer.choice is not None and options and answer.choice not in options:
            raise ValueError(f"choice: {answer.choice!r} is not one of {options}")
        if not answer.text.strip() and answer.choice is None:
            raise ValueError("answer: give a text or a choice")
        self._write("UPDATE escalations SET state='answered', answer=?, choice=?, answered_at=?, "
                    "final_result=NULL, resolved_at=NULL WHERE id=?",
                    (answer.model_dump_json(), answer.choice, time.time(), entry.id))
        return self.get(entry.id)

    def resolve(self, esc_id: str, final: OracleResult) -> None:
        """Store the result computed with the answer applied."""
        self._write("UPDATE escalations SET state='resolved', final_result=?, resolved_at=? WHERE id=?",
                    (final.model_dump_json(), time.time(), esc_id))

    def get(self, esc_id: str) -> StoredEscalation:
        with self._lock:
            row = self._conn.execute("SELECT * FROM escalations WHERE id=?", (esc_id,)).fetchone()
            if row is None:
                # a unique prefix is enough, as with git hashes
                rows = self._conn.execute("SELECT * FROM escalations WHERE id LIKE ?",
                                          (esc_id.replace("%", "") + "%",)).fetchall()
                if len(rows) != 1:
                    raise EscalationNotFound(f"no escalation {esc_id!r} in {self.path}"
                                             + (" (ambiguous prefix)" if rows else ""))
                row = rows[0]
            cols = [d[0] for d in self._conn.execute("SELECT * FROM escalations LIMIT 0").description]
        return _entry(dict(zip(cols, row)))

    def list(self, state: EntryState | None = None) -> list[StoredEscalation]:
        return list(self.iter(state))

    def iter(self, state: EntryState | None = None) -> Iterator[StoredEscalation]:
        sql = "SELECT * FROM escalations" + (" WHERE state=?" if state else "") + " ORDER BY created_at, id"
        with self._lock:
            cur = self._conn.execute(sql, (state,) if state else ())
            cols = [d[0] for d in cur.description]
            rows = cur.fetchall()
        for row in rows:
            yield _entry(dict(zip(cols, row)))

    def count(self, state: EntryState | None = None) -> int:
        sql = "SELECT COUNT(*) FROM escalations" + (" WHERE state=?" if state else "")
        with self._lock:
            return int(self._conn.execute(sql, (state,) if state else ()).fetchone()[0])


def _entry(row: dict[str, Any]) -> StoredEscalation:
    return StoredEscalation(
        id=row["id"], task_id=row["task_id"], state=row["state"], created_at=row["created_at"],
        answered_at=row["answered_at"], resolved_at=row["resolved_at"],
        request=Escalation.model_validate_json(row["request"]),
        item=TaskInput.model_validate_json(row["task_input"]),
        first_result=OracleResult.model_validate_json(row["first_result"]),
        answer=HumanAnswer.model_validate(json.loads(row["answer"])) if row["answer"] else None,
        final_result=OracleResult.model_validate_json(row["final_result"]) if row["final_result"] else None)
