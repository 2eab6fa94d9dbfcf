"""Batch CLI honesty: what can be checked is checked before the first line runs, an export never
touches the JSONL rows, and --strict gives CI an exit code to rely on. Real subprocesses."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from oracle.batch import export_parquet

REPO = Path(__file__).resolve().parents[1]
TASK = {"task": {"id": "capital", "prompt": "Capital of France?", "reference": "Paris", "evaluator": "verifier"},
        "trajectories": [{"id": "a", "answer": "Paris"}, {"id": "b", "answer": "Lyon"}]}


def run_cli(*args: str, pre: str = "") -> subprocess.CompletedProcess:
    code = f"{pre}\nimport sys\nfrom oracle.cli.main import main\nsys.exit(main(sys.argv[1:]))"
    return subprocess.run([sys.executable, "-c", code, *args], cwd=REPO, capture_output=True, text=True,
                          timeout=120)


def write_jsonl(path: Path, *lines: str) -> Path:
    path.write_text("\n".join(lines) + "\n")
    return path


def test_a_parquet_output_name_is_refused_before_anything_runs(tmp_path):
    src = write_jsonl(tmp_path / "in.jsonl", json.dumps(TASK))
    out = tmp_path / "r.parquet"
    res = run_cli("batch", str(src), "-o", str(out), "--export", "parquet", "--no-store")
    assert res.returncode == 2, res.stderr
    assert "--output" in res.stderr and ".jsonl" in res.stderr
    assert not out.exists()


def test_a_yaml_file_is_bad_input_by_its_extension(tmp_path):
    src = tmp_path / "task.yaml"
    src.write_text("task: {id: t, prompt: p, reference: x}\ntrajectories: [{id: a, answer: x}]\n")
    out = tmp_path / "r.jsonl"
    res = run_cli("batch", str(src), "-o", str(out), "--no-store")
    assert res.returncode == 2 and "oracle evaluate" in res.stderr, res.stderr
    assert not out.exists()


def test_missing_pyarrow_is_found_before_the_batch_runs(tmp_path):
    src = write_jsonl(tmp_path / "in.jsonl", json.dumps(TASK))
    out = tmp_path / "r.jsonl"
    res = run_cli("batch", str(src), "-o", str(out), "--export", "parquet", "--no-store",
                  pre="import sys\nsys.modules['pyarrow'] = None\nsys.modules['pyarrow.parquet'] = None")
    assert res.returncode == 2 and "pyarrow" in res.stderr, res.stderr
    assert not out.exists()


def test_export_writes_beside_the_rows_and_never_over_them(tmp_path):
    pytest.importorskip("pyarrow")
    src = write_jsonl(tmp_path / "in.jsonl", json.dumps(TASK),
                      json.dumps({**TASK, "task": {**TASK["task"], "id": "t2"}}))
    out = tmp_path / "r.jsonl"
    res = run_cli("batch", str(src), "-o", str(out), "--export", "parquet", "--no-store")
    assert res.returncode == 0, res.stderr
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(rows) == 2 and all(r["status"] == "ok" for r in rows)
    import pyarrow.parquet as pq
    assert pq.read_table(tmp_path / "r.parquet").num_rows == 2
    before = out.read_bytes()
    with pytest.raises(ValueError, match="overwrite"):
        export_parquet(out, out)
    assert out.read_bytes() == before  # the rows are untouched
    assert not list(tmp_path.glob(".*.partial"))


@pytest.mark.slow
def test_strict_exits_3_when_a_row_is_not_ok(tmp_path):
    src = write_jsonl(tmp_path / "in.jsonl", json.dumps(TASK), "{not json")
    lenient = run_cli("batch", str(src), "-o", str(tmp_path / "a.jsonl"), "--no-store")
    assert lenient.returncode == 0, lenient.stderr
    strict = run_cli("batch", str(src), "-o", str(tmp_path / "b.jsonl"), "--no-store", "--strict")
    assert strict.returncode == 3, strict.stderr
    assert "1 row(s) not ok" in strict.stderr and "invalid 1" in strict.stderr
    assert len((tmp_path / "b.jsonl").read_text().splitlines()) == 2  # every line still has its row
    clean = write_jsonl(tmp_path / "clean.jsonl", json.dumps(TASK))
    assert run_cli("batch", str(clean), "-o", str(tmp_path / "c.jsonl"), "--no-store", "--strict").returncode == 0


def test_reading_escalations_never_creates_a_store(tmp_path):
    store = tmp_path / "nested" / "esc.sqlite"
    listed = run_cli("escalations", "list", "--store", str(store))
    assert listed.returncode == 0 and "no store at" in listed.stderr, listed.stderr
    shown = run_cli("escalations", "show", "esc-12345678", "--store", str(store))
    assert shown.returncode == 2 and "no escalation store" in shown.stderr
    assert not store.exists() and not store.parent.exists()
