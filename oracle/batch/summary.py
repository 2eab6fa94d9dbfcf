"""The end-of-run summary (per evaluator) and the optional Parquet export, both read from the
output file so a resumed run reports on every row, not only the ones it computed itself.

The summary is plain data (a JSON-ready dict); the CLI lays it out as a table (oracle/cli/render.py)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from oracle.batch.output import iter_rows

_FAILED = ("failed", "unparsed")


def _percentile(values: list[float], q: float) -> float | None:
    if not values:
        return None
    values = sorted(values)
    k = (len(values) - 1) * q
    lo, hi = int(k), min(int(k) + 1, len(values) - 1)
    return values[lo] + (values[hi] - values[lo]) * (k - lo)


@dataclass
class EvaluatorStats:
    count: int = 0
    passed: int = 0
    judged: int = 0
    """Rows with a pass/fail verdict (the pass-rate denominator)."""
    failures: int = 0
    escalations: int = 0
    pending: int = 0
    skipped: int = 0
    """Rows not run (a budget ran out): not failures, not in the pass rate; a rerun computes them."""
    cost_usd: float = 0.0
    cost_unknown: int = 0
    model_calls: int | None = 0
    """Model requests of the rows (None once a row does not say: a crash, a row from before it was kept)."""
    latencies: list[float] = field(default_factory=list)

    def add(self, row: dict[str, Any]) -> None:
        self.count += 1
        if row.get("passed") is not None:
            self.judged += 1
            self.passed += bool(row["passed"])
        self.failures += row.get("status") in _FAILED
        self.escalations += row.get("escalation") is not None
        self.pending += row.get("status") == "pending"
        self.skipped += row.get("status") == "skipped"
        if row.get("cost_usd") is not None:
            self.cost_usd += float(row["cost_usd"])
        elif row.get("calls") or ("calls" in row and row["calls"] is None):  # None: count unknown
            self.cost_unknown += 1
        requests = _model_requests(row)
        self.model_calls = None if (requests is None or self.model_calls is None) else self.model_calls + requests
        if row.get("latency_ms") is not None:
            self.latencies.append(float(row["latency_ms"]))

    def as_dict(self) -> dict[str, Any]:
        return {"count": self.count, "pass_rate": (self.passed / self.judged) if self.judged else None,
                "judged": self.judged, "failures": self.failures, "escalations": self.escalations,
                "pending": self.pending, "skipped": self.skipped,
                "cost_usd": round(self.cost_usd, 6), "cost_unknown": self.cost_unknown,
                "model_calls": self.model_calls,
                "latency_p50_ms": _percentile(self.latencies, 0.5),
                "latency_p95_ms": _percentile(self.latencies, 0.95)}


def _model_requests(row: dict[str, Any]) -> int | None:
    """The model requests behind a row (its result's provenance), None when the row does not say."""
    outer = row.get("result")
    inner = outer.get("result") if isinstance(outer, dict) else None
    prov = inner.get("provenance") if isinstance(inner, dict) else None
    if not isinstance(prov, dict):  # no result: an invalid line or a crash before any call ran says 0 calls
        return 0 if row.get("calls") == 0 else None
    requests = prov.get("requests", 0)  # the dump leaves defaults out: no key is no request
    failed = prov.get("failed_calls") or []
    return requests + len(failed) if isinstance(requests, int) and isinstance(failed, list) else None


def summarize(path: str | Path) -> dict[str, Any]:
    per: dict[str, EvaluatorStats] = {}
    statuses: dict[str, int] = {}
    rows = 0
    for row in iter_rows(path):
        rows += 1
        status = "invalid" if row.get("valid") is False else str(row.get("status"))
        statuses[status] = statuses.get(status, 0) + 1
        name = row.get("evaluator") or ("(invalid input)" if row.get("valid") is False else "(none)")
        per.setdefault(name, EvaluatorStats()).add(row)
    return {"rows": rows, "statuses": dict(sorted(statuses.items())),
            "evaluators": {k: v.as_dict() for k, v in sorted(per.items())}}


PARQUET_COLUMNS = ("line", "task_id", "key", "valid", "status", "evaluator", "best", "score", "passed",
                   "escalation_id", "escalation_reason", "latency_ms", "cost_usd", "calls", "error_type",
                   "error_message", "result_json")


def export_parquet(path: str | Path, dest: str | Path, *, batch_rows: int = 1000) -> int:
    """Write the rows as a Parquet file in row groups (memory bounded); needs the ``[parquet]`` extra."""
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError:
        raise RuntimeError("--export parquet needs pyarrow: pip install 'oracle-router[parquet]'") from None
    schema = pa.schema([("line", pa.int64()), ("task_id", pa.string()), ("key", pa.string()),
                        ("valid", pa.bool_()), ("status", pa.string()), ("evaluator", pa.string()),
                        ("best", pa.list_(pa.string())), ("score", pa.float64()), ("passed", pa.bool_()),
                        ("escalation_id", pa.string()), ("escalation_reason", pa.string()),
                        ("latency_ms", pa.float64()), ("cost_usd", pa.float64()), ("calls", pa.int64()),
                        ("error_type", pa.string()), ("error_message", pa.string()),
                        ("result_json", pa.string())])
    n = 0
    dest = Path(dest)
    if dest.resolve() == Path(path).resolve():
        raise ValueError(f"the Parquet export {dest} would overwrite the JSONL rows it reads")
    tmp = dest.with_name(f".{dest.name}.partial")  # renamed into place only once complete
    try:
        n = _write_parquet(path, tmp, pa, pq, schema, batch_rows)
        tmp.replace(dest)
    finally:
        tmp.unlink(missing_ok=True)
    return n


def parquet_available() -> bool:
    """Whether the Parquet export can run here (checked before a batch starts)."""
    try:
        import pyarrow
        import pyarrow.parquet  # noqa: F401
    except ImportError:
        return False
    return True


def _write_parquet(path: str | Path, dest: Path, pa: Any, pq: Any, schema: Any, batch_rows: int) -> int:
    n = 0
    with pq.ParquetWriter(str(dest), schema) as out:
        buf: list[dict[str, Any]] = []
        for row in iter_rows(path):
            esc, err = row.get("escalation") or {}, row.get("error") or {}
            buf.append({"line": row["line"], "task_id": row.get("task_id"), "key": row["key"],
                        "valid": row.get("valid"), "status": row.get("status"), "evaluator": row.get("evaluator"),
                        "best": row.get("best") or [], "score": row.get("score"), "passed": row.get("passed"),
                        "escalation_id": esc.get("id"), "escalation_reason": esc.get("reason"),
                        "latency_ms": row.get("latency_ms"), "cost_usd": row.get("cost_usd"),
                        "calls": row.get("calls"), "error_type": err.get("type"),
                        "error_message": err.get("message"),
                        "result_json": json.dumps(row["result"], sort_keys=True) if row.get("result") else None})
            if len(buf) >= batch_rows:
                out.write_table(pa.Table.from_pylist(buf, schema=schema))
                n += len(buf)
                buf = []
        if buf:
            out.write_table(pa.Table.from_pylist(buf, schema=schema))
            n += len(buf)
    return n
