"""``--format candidates``: one flat row per candidate, for pandas and spreadsheets.

Built from the result rows (``oracle batch`` / ``oracle evaluate --json``, as dicts), so a batch
output already on disk converts the same way as a fresh run. The file's extension picks the format:
``.jsonl``, ``.csv`` or ``.parquet`` (the ``parquet`` extra). ``cost_usd`` and ``latency_ms`` are
the task's evaluation (one model call can judge several candidates), repeated on each of its
candidates: total them per ``task_id``, not per row. A row without candidates (invalid input, a
crash, no feasible evaluator) still gets one row, ``candidate_id`` empty, its error as ``reason``,
so a failure never disappears from the table.
"""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any, Iterable, Iterator, Mapping

COLUMNS = ("task_id", "candidate_id", "evaluator", "passed", "score", "status", "reason", "cost_usd", "latency_ms")
FORMATS = {".jsonl": "jsonl", ".csv": "csv", ".parquet": "parquet"}
PARQUET_MISSING = "needs pyarrow: pip install 'oracle-router[parquet]'"


def output_problem(path: str) -> str | None:
    """Why ``-o PATH`` cannot take candidate rows (checked before anything runs), or None."""
    suffix = Path(path).suffix.lower()
    if suffix not in FORMATS:
        return f"-o {path}: --format candidates writes .jsonl, .csv or .parquet (from the extension)"
    if FORMATS[suffix] == "parquet":
        from oracle.batch import parquet_available

        if not parquet_available():
            return f"-o {path}: Parquet output {PARQUET_MISSING}"
    parent = Path(path).parent
    if not parent.is_dir():
        return f"-o {path}: the directory {parent} does not exist"
    if Path(path).is_dir():
        return f"-o {path}: is a directory"
    return None


def candidate_rows(row: Mapping[str, Any]) -> Iterator[dict[str, Any]]:
    """The candidate rows of one result row."""
    from oracle.cli.render import why

    got = row.get("result")
    outer: Mapping[str, Any] = got if isinstance(got, Mapping) else {}
    nested = outer.get("result")
    inner: Mapping[str, Any] | None = nested if isinstance(nested, Mapping) else None
    base = {"task_id": row.get("task_id"), "evaluator": (inner or {}).get("evaluator") or row.get("evaluator"),
            "cost_usd": row.get("cost_usd"), "latency_ms": row.get("latency_ms")}
    candidates = inner.get("candidates") if inner else None
    if not candidates:
        error = row.get("error") or (inner or {}).get("error") or {}
        reason = f"{error.get('type')}: {error.get('message')}" if error else ""
        yield {**base, "candidate_id": None, "passed": None, "score": None, "status": row.get("status"),
               "reason": reason}
        return
    for c in candidates:
        yield {**base, "candidate_id": c.get("id"), "passed": c.get("passed"), "score": c.get("score"),
               "status": c.get("status"), "reason": why(c.get("details") or {})}


def write_candidates(rows: Iterable[Mapping[str, Any]], path: str) -> int:
    """Write every candidate row of ``rows`` to ``path`` (format from the extension); the count."""
    flat = [{k: r[k] for k in COLUMNS} for row in rows for r in candidate_rows(row)]
    kind = FORMATS[Path(path).suffix.lower()]
    if kind == "parquet":
        import pyarrow as pa
        import pyarrow.parquet as pq

        schema = pa.schema([("task_id", pa.string()), ("candidate_id", pa.string()), ("evaluator", pa.string()),
                            ("passed", pa.bool_()), ("score", pa.float64()), ("status", pa.string()),
                            ("reason", pa.string()), ("cost_usd", pa.float64()), ("latency_ms", pa.float64())])
        pq.write_table(pa.Table.from_pylist(flat, schema=schema), path)
    elif kind == "csv":
        with open(path, "w", encoding="utf-8", newline="") as fh:
            writer = csv.DictWriter(fh, fieldnames=COLUMNS)
            writer.writeheader()
            writer.writerows(flat)
    else:
        with open(path, "w", encoding="utf-8") as fh:
            for r in flat:
                fh.write(json.dumps(r, ensure_ascii=False, sort_keys=False) + "\n")
    return len(flat)
