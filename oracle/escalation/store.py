"""A SQLite file holding escalation requests until a person answers them.

Why SQLite in WAL mode: several processes (a batch run filing requests, a reviewer answering them,
``oracle resume`` applying the answers) touch the same file at once, and a request must survive a
crash or a restart. WAL lets readers and one writer proceed together; every write is its own
transaction, so a killed process leaves either the whole row or none of it.

A row keeps everything a later process needs to resume: the request, the task input as given, the
first evaluation, and once given the answer and the final result.

A sibling table, ``outcomes``, logs one row per finished evaluation keyed by the task's content
hash (``oracle.routing._history`` reads it as prior hardness). Rows are only appended, each with a rising
``seq``, so "every outcome up to seq N" is a fixed set: the snapshot a batch routes with.
"""

from __future__ import annotations

import sqlite3
import threading
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator, Literal

from pydantic import BaseModel, ConfigDict, Field

from oracle.errors import AlreadyAnswered, EscalationNotFound, EscalationStoreError
from oracle.escalation.human import HumanAnswer
from oracle.results.result import Escalation, OracleResult
from oracle.tasks.task import TaskInput

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
CREATE TABLE IF NOT EXISTS outcomes (
    seq         INTEGER PRIMARY KEY AUTOINCREMENT,
    task_hash   TEXT NOT NULL,
    task_id     TEXT NOT NULL,
    recorded_at REAL NOT NULL,
    evaluator   TEXT,
    status      TEXT NOT NULL,
    escalation  TEXT,
    hard        INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS outcomes_task ON outcomes(task_hash);
"""
_COLUMNS = {"id", "task_id", "reason", "blocking", "state", "created_at", "answered_at", "resolved_at",
            "request", "task_input", "first_result", "answer", "choice", "final_result"}


MAX_TIMESTAMP = 1e11
"""Seconds since 1970 past year 5000: a stored time beyond it is a tampered row, not a date."""


class StoredEscalation(BaseModel):
    """One row of the store."""

    model_config = ConfigDict(extra="forbid")

    id: str = Field(min_length=1, max_length=200)
    task_id: str = Field(max_length=10_000)
    state: EntryState
    created_at: float = Field(ge=0, le=MAX_TIMESTAMP, allow_inf_nan=False)
    answered_at: float | None = Field(default=None, ge=0, le=MAX_TIMESTAMP, allow_inf_nan=False)
    resolved_at: float | None = Field(default=None, ge=0, le=MAX_TIMESTAMP, allow_inf_nan=False)
    request: Escalation
    item: TaskInput
    first_result: OracleResult
    answer: HumanAnswer | None = None
    final_result: OracleResult | None = None


MIN_PREFIX = 8
"""A shorter id prefix is refused: ``esc-`` alone (or ``""``) must never pick a request."""


@contextmanager
def _database_errors(path: Path) -> Iterator[None]:
    """sqlite3 failures (not a database, locked past the timeout, unreadable) name the file."""
    try:
        yield
    except sqlite3.DatabaseError as exc:
        raise EscalationStoreError(f"escalation store {path}: {exc} (is it an oracle escalation store?)") from None


class EscalationStore:
    """Pending requests and their answers in one SQLite file (WAL mode); safe across processes.

    The first answer wins: ``answer`` changes only a pending request, in one conditional UPDATE,
    so of twenty processes answering at once exactly one succeeds and the others are refused
    with the answer that stands (``AlreadyAnswered``); ``replace=True`` overrides on purpose.
    """

    def __init__(self, path: str | Path, *, open_now: bool = True) -> None:
        """``open_now=False``: check the path now, open (and create) the file at the first read or
        write, so a run that files nothing leaves no file behind (``oracle evaluate``)."""
        self.path = Path(path)
        if self.path.is_dir():
            raise EscalationStoreError(f"escalation store {self.path}: is a directory")
        if self.path.is_symlink():  # SQLite cannot be told O_NOFOLLOW: refuse the link by name
            raise EscalationStoreError(f"escalation store {self.path}: is a symbolic link; refusing to "
                                       "follow it (give the real path)")
        if str(self.path) != ":memory:":
            _check_encodable(str(self.path))
        self._lock = threading.Lock()
        self._conn_: sqlite3.Connection | None = None
        if open_now:
            with self._lock:
                self._connect()

    @property
    def _conn(self) -> sqlite3.Connection:
        """The connection, opened on first use (the caller holds ``_lock``)."""
        return self._conn_ if self._conn_ is not None else self._connect()

    @property
    def opened(self) -> bool:
        """Whether the file has been opened (it always is unless ``open_now=False`` and unused)."""
        return self._conn_ is not None

    def _connect(self) -> sqlite3.Connection:
        if self._conn_ is not None:
            return self._conn_
        with _database_errors(self.path):
            self.path.parent.mkdir(parents=True, exist_ok=True)
            conn = sqlite3.connect(str(self.path), timeout=30.0, check_same_thread=False, isolation_level=None)
            try:
                conn.execute("PRAGMA journal_mode=WAL")
                conn.execute("PRAGMA synchronous=FULL")
                conn.execute("PRAGMA busy_timeout=30000")
                conn.executescript(_SCHEMA)
                cols = {row[1] for row in conn.execute("PRAGMA table_info(escalations)")}
            except BaseException:
                conn.close()
                raise
        missing = _COLUMNS - cols
        if missing:
            conn.close()
            raise EscalationStoreError(f"escalation store {self.path}: table escalations lacks columns "
                                       f"{sorted(missing)} (not an oracle escalation store?)")
        self._conn_ = conn
        return conn

    def close(self) -> None:
        with self._lock:
            if self._conn_ is not None:
                self._conn_.close()

    def __enter__(self) -> "EscalationStore":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _write(self, sql: str, params: tuple[Any, ...]) -> int:
        with self._lock, _database_errors(self.path):
            cur = self._conn.execute(sql, params)
            return cur.rowcount

    def _rows(self, sql: str, params: tuple[Any, ...]) -> list[dict[str, Any]]:
        with self._lock, _database_errors(self.path):
            cur = self._conn.execute(sql, params)
            cols = [d[0] for d in cur.description]
            return [dict(zip(cols, row)) for row in cur.fetchall()]

    def put(self, request: Escalation, item: TaskInput, first_result: OracleResult) -> bool:
        """File a request; False when the same request (same id) is already stored."""
        try:
            _check_request(request, request.id)
        except ValueError as exc:  # refused here, so the store never holds a row it would not read
            raise ValueError(f"request: {exc}") from None
        first = first_result.model_copy(update={"history": []})
        return self._write(
            "INSERT OR IGNORE INTO escalations (id, task_id, reason, blocking, state, created_at, request,"
            " task_input, first_result) VALUES (?, ?, ?, ?, 'pending', ?, ?, ?, ?)",
            (request.id, item.task.id, request.reason, int(request.blocking), time.time(),
             request.model_dump_json(), item.model_dump_json(), first.model_dump_json())) == 1

    def answer(self, esc_id: str, answer: HumanAnswer, *, replace: bool = False) -> StoredEscalation:
        """Record the answer to a pending request; the first answer wins unless ``replace``.

        A choice must be one of the request's options when it has any. ``replace=True`` also
        reopens a resolved request (its final result is cleared until ``oracle resume`` runs).
        """
        entry = self.get(esc_id)
        problem = _answer_problem(entry.request, answer)
        if problem is not None:  # the caller's answer, checked against the request this file holds
            raise ValueError(f"escalation {entry.id} in {self.path}: {problem}")
        guard = "" if replace else " AND state='pending'"
        changed = self._write("UPDATE escalations SET state='answered', answer=?, choice=?, answered_at=?, "
                              "final_result=NULL, resolved_at=NULL WHERE id=?" + guard,
                              (answer.model_dump_json(), answer.choice, time.time(), entry.id))
        if changed != 1:
            current = self.get(entry.id)
            raise AlreadyAnswered(f"escalation {entry.id} in {self.path} is already {current.state}: "
                                  f"{_describe_answer(current)}; pass --replace (replace=True) to change it",
                                  existing=current.answer)
        return self.get(entry.id)

    def resolve(self, esc_id: str, final: OracleResult) -> None:
        """Store the result computed with the answer applied."""
        self._write("UPDATE escalations SET state='resolved', final_result=?, resolved_at=? WHERE id=?",
                    (final.model_dump_json(), time.time(), esc_id))

    def get(self, esc_id: str) -> StoredEscalation:
        """The request with this id, or the one request whose id starts with it (literally).

        A prefix must have at least ``MIN_PREFIX`` characters and match exactly one request;
        ``%`` and ``_`` are plain characters here, not SQL wildcards.
        """
        rows = self._rows("SELECT * FROM escalations WHERE id=?", (esc_id,))
        if not rows:
            if len(esc_id) < MIN_PREFIX:
                raise EscalationNotFound(f"no escalation {esc_id!r} in {self.path} (a prefix needs at "
                                         f"least {MIN_PREFIX} characters)")
            rows = self._rows("SELECT * FROM escalations WHERE substr(id, 1, ?) = ? ORDER BY id LIMIT 6",
                              (len(esc_id), esc_id))
            if len(rows) != 1:
                more = f" (ambiguous prefix: {', '.join(r['id'] for r in rows[:5])}...)" if rows else ""
                raise EscalationNotFound(f"no escalation {esc_id!r} in {self.path}{more}")
        return self._entry(rows[0])

    def list(self, state: EntryState | None = None) -> list[StoredEscalation]:
        return list(self.iter(state))

    def iter(self, state: EntryState | None = None) -> Iterator[StoredEscalation]:
        sql = "SELECT * FROM escalations" + (" WHERE state=?" if state else "") + " ORDER BY created_at, id"
        for row in self._rows(sql, (state,) if state else ()):
            yield self._entry(row)

    def count(self, state: EntryState | None = None) -> int:
        sql = "SELECT COUNT(*) AS n FROM escalations" + (" WHERE state=?" if state else "")
        return int(self._rows(sql, (state,) if state else ())[0]["n"])

    # -- evaluation outcomes (the routing history) ---------------------------------------------
    def record_outcome(self, *, task_hash: str, task_id: str, evaluator: str | None, status: str,
                       escalation: str | None, hard: bool) -> int:
        """Append one evaluation's outcome; returns its ``seq``. One INSERT: all or nothing."""
        with self._lock, _database_errors(self.path):
            cur = self._conn.execute(
                "INSERT INTO outcomes (task_hash, task_id, recorded_at, evaluator, status, escalation, hard) "
                "VALUES (?, ?, ?, ?, ?, ?, ?)",
                (task_hash, task_id, time.time(), evaluator, status, escalation, int(hard)))
            return int(cur.lastrowid or 0)

    def last_outcome_seq(self) -> int:
        """The newest outcome's ``seq`` (0 when none is recorded)."""
        return int(self._rows("SELECT COALESCE(MAX(seq), 0) AS n FROM outcomes", ())[0]["n"])

    def outcome_counts(self, through_seq: int) -> dict[str, tuple[int, int]]:
        """task content hash -> (evaluations, hard ones), over outcomes with ``seq <= through_seq``."""
        rows = self._rows("SELECT task_hash, COUNT(*) AS n, SUM(hard) AS hard FROM outcomes WHERE seq <= ? "
                          "GROUP BY task_hash", (through_seq,))
        out: dict[str, tuple[int, int]] = {}
        for r in rows:
            task_hash, n, hard = r["task_hash"], r["n"], r["hard"] or 0
            if not (isinstance(task_hash, str) and len(task_hash) <= 200 and isinstance(n, int)
                    and isinstance(hard, (int, float)) and 0 <= hard <= n):
                raise EscalationStoreError(f"escalation store {self.path}: outcomes: a row for task hash "
                                           f"{ascii(task_hash)[:80]} is corrupt (task_hash text, hard 0 or 1)")
            out[task_hash] = (int(n), int(hard))
        return out

    def _entry(self, row: dict[str, Any]) -> StoredEscalation:
        """A row as a typed entry; a row that does not decode is a corrupt store, named."""
        column = "id"
        try:
            for column in ("id", "task_id", "state"):
                if not isinstance(row[column], str):
                    raise ValueError(f"not text ({type(row[column]).__name__})")
                _check_text(row[column])
            values: dict[str, Any] = {}
            for column, model in (("request", Escalation), ("task_input", TaskInput), ("first_result", OracleResult),
                                  ("answer", HumanAnswer), ("final_result", OracleResult)):
                values[column] = _decoded(row[column], model, required=column in ("request", "task_input",
                                                                                  "first_result"))
            column = "request"
            _check_request(values["request"], row["id"])
            column = "answer"
            if values["answer"] is not None:
                problem = _answer_problem(values["request"], values["answer"])
                if problem is not None:  # store.answer never writes one: the row was edited
                    raise ValueError(problem)
            column = "state"
            if row["state"] in ("answered", "resolved") and values["answer"] is None:
                raise ValueError(f"{row['state']} but no answer is stored")
            if row["state"] == "resolved" and values["final_result"] is None:
                raise ValueError("resolved but no final result is stored")
            column = "(row)"
            return StoredEscalation(
                id=row["id"], task_id=row["task_id"], state=row["state"], created_at=row["created_at"],
                answered_at=row["answered_at"], resolved_at=row["resolved_at"], request=values["request"],
                item=values["task_input"], first_result=values["first_result"], answer=values["answer"],
                final_result=values["final_result"])
        except (ValueError, TypeError, RecursionError) as exc:  # pydantic's ValidationError is a ValueError
            first = (str(exc).splitlines() or [type(exc).__name__])[0][:200]
            if len(str(exc).splitlines()) > 1:  # pydantic: "1 validation error for X" / "loc" / "msg"
                first = " ".join(line.strip() for line in str(exc).splitlines()[1:3])[:200]
            raise EscalationStoreError(f"escalation store {self.path}: row {ascii(row.get('id'))[:80]} is corrupt: "
                                       f"{column}: {first}") from None


MAX_ROW_JSON_BYTES = 256 * 1024 * 1024
"""A stored JSON column past this is not one the store wrote (a task is at most limits.max_file_bytes)."""


def _check_request(request: Escalation, row_id: str) -> None:
    """``ValueError`` for a request the store would not file: another id than its row's, or an
    empty option (shown as a blank line, and to the console reader an empty line means "later")."""
    if request.id != row_id:
        raise ValueError(f"id {ascii(request.id)[:80]} is not the row's id")
    for i, option in enumerate(request.options or []):
        if option == "":
            raise ValueError(f"options[{i}]: empty (an option must be a non-empty text)")


def _answer_problem(request: Escalation, answer: HumanAnswer) -> str | None:
    """Why ``answer`` does not fit ``request`` (a choice outside its options, or nothing given)."""
    options = request.options
    if answer.choice is not None and options and answer.choice not in options:
        return f"choice: {answer.choice!r} is not one of {options}"
    if not answer.text.strip() and answer.choice is None:
        return "answer: give a text or a choice"
    return None


def _check_text(value: str) -> None:
    """``ValueError`` for text no UTF-8 encoder can write (a lone surrogate)."""
    from oracle._internal.decoded import scalar_problem

    problem = scalar_problem(value)
    if problem is not None:
        raise ValueError(problem)


def _check_encodable(path: str) -> None:
    try:
        path.encode("utf-8")
    except UnicodeEncodeError:
        raise EscalationStoreError(f"escalation store {ascii(path)}: the path is not valid text") from None


def _decoded(raw: Any, model: Any, *, required: bool) -> Any:
    """A stored JSON column as its model: pydantic's JSON parser refuses lone surrogates, numbers
    past its range and nesting past its limit; anything not text (an integer, a blob) is refused."""
    if raw is None or raw == "":
        if required:
            raise ValueError("missing")
        return None
    if isinstance(raw, bytes):
        raise ValueError("stored as a blob, not JSON text")
    if not isinstance(raw, str):
        raise ValueError(f"stored as {type(raw).__name__}, not JSON text")
    if len(raw) > MAX_ROW_JSON_BYTES:
        raise ValueError(f"larger than {MAX_ROW_JSON_BYTES} bytes")
    return model.model_validate_json(raw)


def _describe_answer(entry: StoredEscalation) -> str:
    if entry.answer is None:
        return "no answer recorded"
    try:
        when = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(entry.answered_at)) if entry.answered_at else "?"
    except (OverflowError, OSError, ValueError):
        when = "?"
    who = f" by {entry.answer.answered_by}" if entry.answer.answered_by else ""
    return f"answered{who} at {when} with choice={entry.answer.choice!r} text={entry.answer.text[:80]!r}"

