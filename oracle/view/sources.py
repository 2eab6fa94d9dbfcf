"""Reading what ``oracle view`` is given: results files, task files, compare folders, an escalation store.

Every path is read and checked before the server starts, so bad input is an error naming the path
(and the line) with exit 2, never a page that fails later. What a path is, is told by its content:
a directory with ``runs.jsonl`` or ``summary.json`` is a compare folder; a file starting with
SQLite's header is an escalation store; a JSON or JSONL file holds result rows (``oracle evaluate
--json``, ``oracle batch``: the one row schema of oracle/batch/rows.py, or a bare ``OracleResult``)
or task inputs (``{"task": ..., "trajectories": ...}``, which give the result rows their prompt and
candidates, matched by task id). A YAML file is a task file.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any, Iterable

from oracle.view.catalog import Catalog, CompareFolder, Entry

SQLITE_MAGIC = b"SQLite format 3\x00"
_PLOT = re.compile(r'<div class="plot" id="plot-([\w-]+)">(<svg.*?</svg>)\s*</div>', re.DOTALL)


class ViewInputError(ValueError):
    """A path given to ``oracle view`` that is missing or holds no results; the message names it."""


def load_catalog(paths: Iterable[str], *, store: str | None = None) -> Catalog:
    """Read every path (and the store) into one catalog; raises ``ViewInputError`` naming the bad one."""
    catalog = Catalog()
    tasks: dict[str, dict[str, Any]] = {}
    stores: list[str] = [store] if store else []
    given = list(paths)
    if not given and not stores:
        raise ViewInputError("no path given: name results files, compare folders or an escalation store")
    for name in given:
        path = Path(name)
        if not path.exists():
            raise ViewInputError(f"{name}: no such file or directory")
        if path.is_dir():
            catalog.compares.append(_compare_folder(path, f"c{len(catalog.compares)}"))
        elif _is_sqlite(path):
            stores.append(name)
        else:
            rows, inputs = _rows_or_tasks(path)
            for line, row in rows:
                catalog.entries.append(Entry(key=f"r{len(catalog.entries)}", source=f"{path.name}:{line}", row=row))
            for item in inputs:
                tasks.setdefault(str(item["task"].get("id")), item)
    if len(stores) > 1:
        raise ViewInputError(f"{stores[1]}: one escalation store at a time (also given: {stores[0]})")
    for entry in catalog.entries:
        found = tasks.get(str(entry.row.get("task_id")))
        if found is not None:
            entry.item = found
    if stores:
        catalog.store_path = stores[0]
        _merge_store(catalog, stores[0])
    if not catalog.entries and not catalog.compares and catalog.store_path is None:
        raise ViewInputError(f"{given[0]}: holds tasks, not results: give the results file "
                             "(oracle evaluate --json, oracle batch output) beside it")
    catalog.index()
    return catalog


def _is_sqlite(path: Path) -> bool:
    try:
        with path.open("rb") as fh:
            return fh.read(len(SQLITE_MAGIC)) == SQLITE_MAGIC
    except OSError as exc:
        raise ViewInputError(f"{path}: cannot read: {exc.strerror}") from None


def _records(path: Path) -> list[tuple[int, Any]]:
    """The JSON values of a file: one document, or one per line (JSONL); errors name path and line."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ViewInputError(f"{path}: cannot read as UTF-8 text: {exc}") from None
    if path.suffix.lower() in (".yaml", ".yml"):
        return []
    stripped = text.strip()
    if not stripped:
        raise ViewInputError(f"{path}: empty file (no results)")
    try:
        whole = json.loads(stripped)
    except json.JSONDecodeError:
        whole = None
    else:
        return list(enumerate(whole, start=1)) if isinstance(whole, list) else [(1, whole)]
    out = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            out.append((number, json.loads(line)))
        except json.JSONDecodeError as exc:
            raise ViewInputError(f"{path}: line {number}: not JSON ({exc.msg}); not a results file") from None
    return out


def _rows_or_tasks(path: Path) -> tuple[list[tuple[int, dict[str, Any]]], list[dict[str, Any]]]:
    """Result rows and task inputs of one file; anything else is refused naming the line."""
    if path.suffix.lower() in (".yaml", ".yml"):
        return [], _task_file(path)
    rows: list[tuple[int, dict[str, Any]]] = []
    inputs: list[dict[str, Any]] = []
    for number, value in _records(path):
        kind = _kind(value)
        if kind == "row":
            rows.append((number, value))
        elif kind == "result":
            rows.append((number, _row_of_result(value, number)))
        elif kind == "task":
            inputs.append(value)
        else:
            raise ViewInputError(f"{path}: line {number}: not an oracle result (a row of oracle evaluate --json "
                                 "or oracle batch, with task_id, status and result) nor a task "
                                 "({\"task\": ..., \"trajectories\": ...})")
    if inputs and not rows:
        inputs = _task_file(path)  # validated as the CLI reads a task file
    return rows, inputs


def _kind(value: Any) -> str | None:
    if not isinstance(value, dict):
        return None
    if {"task_id", "status", "result"} <= value.keys() and (value["result"] is None
                                                             or isinstance(value["result"], dict)):
        return "row"
    if {"task_id", "status", "route"} <= value.keys() and isinstance(value["route"], dict):
        return "result"
    if isinstance(value.get("task"), dict) and isinstance(value.get("trajectories"), list):
        return "task"
    return None


def _row_of_result(res: dict[str, Any], line: int) -> dict[str, Any]:
    """A bare OracleResult (``oracle resume --json``) in the row shape, with its flat fields."""
    found = res.get("result")
    evaluation: dict[str, Any] = found if isinstance(found, dict) else {}
    best = list(evaluation.get("best") or [])
    top: dict[str, Any] = next((c for c in evaluation.get("candidates") or [] if best and c.get("id") == best[0]), {})
    esc = res.get("escalation") if isinstance(res.get("escalation"), dict) else None
    return {"line": line, "task_id": res.get("task_id"), "key": None, "valid": True, "status": res.get("status"),
            "evaluator": (res.get("route") or {}).get("evaluator"), "best": best, "score": top.get("score"),
            "passed": top.get("passed"), "latency_ms": evaluation.get("latency_ms"),
            "cost_usd": evaluation.get("cost_usd"), "calls": evaluation.get("calls", 0),
            "escalation": ({"id": esc.get("id"), "reason": esc.get("reason"), "blocking": esc.get("blocking")}
                           if esc else None),
            "error": evaluation.get("error"), "result": res}


def _task_file(path: Path) -> list[dict[str, Any]]:
    from oracle.errors import TaskValidationError
    from oracle.tasks.files import load_tasks

    try:
        return [t.model_dump(mode="json") for t in load_tasks(path)]
    except TaskValidationError as exc:
        raise ViewInputError(f"{path}: not a results file, and not a valid task file: {exc}") from None


def _compare_folder(path: Path, key: str) -> CompareFolder:
    runs, summary_path, report = path / "runs.jsonl", path / "summary.json", path / "report.html"
    if not runs.is_file() and not summary_path.is_file():
        raise ViewInputError(f"{path}: a directory, but not a compare folder (no runs.jsonl or summary.json "
                             "of oracle compare -o DIR)")
    summary = None
    if summary_path.is_file():
        try:
            summary = json.loads(summary_path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise ViewInputError(f"{summary_path}: not a compare summary: {exc}") from None
        if not isinstance(summary, dict) or not isinstance(summary.get("results"), list):
            raise ViewInputError(f"{summary_path}: not a compare summary (no results list)")
    records: list[dict[str, Any]] = []
    if runs.is_file():
        for number, value in _records(runs) if runs.stat().st_size else []:
            if not isinstance(value, dict) or not {"arm", "item_id", "status"} <= value.keys():
                raise ViewInputError(f"{runs}: line {number}: not a run record (arm, item_id, status)")
            records.append(value)
    plots: dict[str, str] = {}
    if report.is_file():
        try:
            plots = dict(_PLOT.findall(report.read_text(encoding="utf-8")))
        except (OSError, UnicodeDecodeError) as exc:
            raise ViewInputError(f"{report}: cannot read: {exc}") from None
    return CompareFolder(key=key, path=str(path), summary=summary, records=records, plots=plots)


def _merge_store(catalog: Catalog, path: str) -> None:
    """Attach each stored request to the row that filed it; a request with no row becomes an entry."""
    from oracle.errors import EscalationStoreError
    from oracle.escalation.store import EscalationStore

    if not Path(path).is_file():
        raise ViewInputError(f"--store {path}: no such file (an escalation store is a SQLite file)")
    _check_store_read_only(path)
    by_id: dict[str, Entry] = {}
    for row_entry in catalog.entries:
        esc = row_entry.escalation
        if esc and esc.get("id"):
            by_id[str(esc["id"])] = row_entry
    try:
        with EscalationStore(path) as store:
            stored = store.list()
    except (EscalationStoreError, ValueError) as exc:
        raise ViewInputError(f"--store {path}: {exc}") from None
    for s in stored:
        record = stored_record(s)
        found = by_id.get(s.id)
        if found is None:
            result = (s.final_result or s.first_result).model_dump(mode="json")
            found = Entry(key=f"s{len(catalog.entries)}", source="store", row=_row_of_result(result, 0))
            catalog.entries.append(found)
        entry: Entry = found
        entry.stored = record
        if entry.item is None:
            entry.item = s.item.model_dump(mode="json")


def _check_store_read_only(path: str) -> None:
    """Refuse a SQLite file that is not an escalation store before opening it for writing (opening
    creates the store's tables: another program's database must come out untouched)."""
    import sqlite3

    from oracle.escalation.store import _COLUMNS

    try:
        with sqlite3.connect(f"{Path(path).resolve().as_uri()}?mode=ro", uri=True) as db:
            cols = {row[1] for row in db.execute("PRAGMA table_info(escalations)")}
    except sqlite3.DatabaseError as exc:
        raise ViewInputError(f"--store {path}: cannot read as SQLite: {exc}") from None
    missing = _COLUMNS - cols
    if missing:
        raise ViewInputError(f"--store {path}: not an oracle escalation store (table escalations lacks "
                             f"{', '.join(sorted(missing))})")


def stored_record(s: Any) -> dict[str, Any]:
    """What a page shows of a stored request: its state, the answer and who gave it."""
    answer = s.answer.model_dump(mode="json") if s.answer else None
    return {"id": s.id, "state": s.state, "answer": answer,
            "options": list(s.request.options or []), "question": s.request.question}
