"""A batch of >= 500 mixed valid and invalid tasks against a fault-injecting wire server:
every input line has exactly one row, and the rows say what happened."""

from __future__ import annotations

import json
from collections import Counter

import pytest

from oracle.batch import export_parquet, run_batch
from oracle.cli.render import batch_summary_blocks, plain_text
from oracle.batch.output import prepare_output
from tests.batch_support import batch_config, faulty_handler, verdicts, write_mixed_tasks
from tests.plugins.oracle_logs import captured_logs


@pytest.mark.slow
def test_every_line_gets_exactly_one_row(scripted_server, tmp_path):
    scripted_server.set_handler(faulty_handler(0.3))
    src, out = tmp_path / "tasks.jsonl", tmp_path / "results.jsonl"
    kinds = write_mixed_tasks(src, 520)
    n_lines = len(src.read_text().splitlines())
    assert n_lines == 520 and kinds["bad_json"] > 20 and kinds["bad_schema"] > 20 and kinds["duplicate"] > 0
    with captured_logs() as logs:
        report = run_batch(src, out, config=batch_config(scripted_server), concurrency=32,
                           store_path=str(tmp_path / "esc.sqlite"), progress_interval_s=0.0, progress_tty=False)
    rows = [json.loads(r) for r in out.read_text().splitlines()]
    lines = Counter(r["line"] for r in rows)
    assert len(rows) == n_lines == report.total and set(lines) == set(range(1, n_lines + 1))
    assert max(lines.values()) == 1
    by_line = {r["line"]: r for r in rows}
    for i, raw in enumerate(src.read_text().splitlines(), start=1):
        row = by_line[i]
        if '"cut-' in raw:
            assert row["task_id"] is None and row["valid"] is False
            assert row["error"]["type"] == "TaskValidationError" and "invalid JSON" in row["error"]["message"]
        elif '"bad-' in raw:
            assert row["task_id"] == json.loads(raw)["task"]["id"] and row["valid"] is False
            assert row["error"]["field"] == "task.difficulty"
        else:
            assert row["valid"] is True and row["task_id"] == json.loads(raw)["task"]["id"]
    statuses = Counter(r["status"] for r in rows if r["valid"])
    faults = [r for r in rows if r["valid"] and r["evaluator"] == "decision_judge" and r["status"] == "failed"]
    assert faults and all(r["error"]["type"] for r in faults)         # faults became failed rows
    assert statuses["ok"] > 100                                          # and the rest were judged
    assert all(r["score"] is None for r in rows if r["status"] == "failed")   # never a made-up score
    assert any(e["event"] == "batch_progress" for e in logs) and any(e["event"] == "batch_done" for e in logs)
    dj = report.summary["evaluators"]["decision_judge"]
    assert dj["count"] == sum(1 for r in rows if r["evaluator"] == "decision_judge")
    assert dj["failures"] == len(faults) and dj["latency_p95_ms"] >= dj["latency_p50_ms"] > 0
    assert report.summary["evaluators"]["(invalid input)"]["count"] == kinds["bad_json"] + kinds["bad_schema"]
    table = plain_text(batch_summary_blocks(report.summary))
    assert "decision_judge" in table and "p95 ms" in table

    # a rerun over a finished file does nothing and duplicates nothing
    again = run_batch(src, out, config=batch_config(scripted_server), concurrency=32, progress_tty=False)
    assert again.resumed == n_lines and again.computed == 0
    assert len(out.read_text().splitlines()) == n_lines


def test_partial_last_line_is_cut_and_redone(scripted_server, tmp_path):
    scripted_server.set_handler(faulty_handler(0.0))
    src, out = tmp_path / "tasks.jsonl", tmp_path / "results.jsonl"
    write_mixed_tasks(src, 30, seed=3)
    run_batch(src, out, config=batch_config(scripted_server), concurrency=4, progress_tty=False)
    reference = verdicts(out)
    data = out.read_bytes().splitlines(keepends=True)
    out.write_bytes(b"".join(data[:-3]) + data[-3][: len(data[-3]) // 2])   # crash mid-write
    assert sum(prepare_output(out).values()) == len(data) - 3
    report = run_batch(src, out, config=batch_config(scripted_server), concurrency=4, progress_tty=False)
    assert report.computed == 3 and verdicts(out) == reference


def test_parquet_export(scripted_server, tmp_path):
    pq = pytest.importorskip("pyarrow.parquet")
    scripted_server.set_handler(faulty_handler(0.2))
    src, out = tmp_path / "tasks.jsonl", tmp_path / "results.jsonl"
    write_mixed_tasks(src, 25, seed=5)
    run_batch(src, out, config=batch_config(scripted_server), concurrency=4, progress_tty=False)
    n = export_parquet(out, tmp_path / "results.parquet", batch_rows=7)
    table = pq.read_table(tmp_path / "results.parquet")
    assert n == table.num_rows == 25
    rows = {json.loads(r)["line"]: json.loads(r) for r in out.read_text().splitlines()}
    for rec in table.to_pylist():
        assert rec["status"] == rows[rec["line"]]["status"] and rec["task_id"] == rows[rec["line"]]["task_id"]
