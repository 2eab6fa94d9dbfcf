"""One bad line never stops a batch, two batches never share an output, a resume de-duplicates.

Real subprocesses for the CLI, a real scripted model server over sockets for the valid lines.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest

import yaml

from oracle.batch.lock import OutputLock
from oracle.batch.output import prepare_output
from tests.data.malformed import corpus
from tests.data.tasks import question_task

ROOT = Path(__file__).resolve().parent.parent


def _config_file(tmp_path: Path, server) -> Path:
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump({
        "providers": {"judge": {"base_url": server.base_url, "max_retries": 0, "timeout_s": 5},
                      "decision": {"kind": "decisions", "base_url": server.base_url, "max_retries": 0,
                                   "timeout_s": 5}},
        "escalation": {"enabled": False}}))
    return path


def _batch(config: Path, src: Path, out: Path, *extra: str, wait: bool = True):
    cmd = [sys.executable, "-m", "oracle", "--config", str(config), "batch", str(src), "-o", str(out),
           "--no-store", "--summary-json", *extra]
    if not wait:
        return subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    return subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=300)


def _rows(out: Path) -> list[dict]:
    return [json.loads(r) for r in out.read_text().splitlines()]


def _hostile_lines() -> list[bytes]:
    """Every malformed JSON document of the corpus as one line, plus lines no file could hold."""
    lines = [data.replace(b"\n", b" ") for suffix, data, _ in corpus().values()
             if suffix == ".json" and data.strip()]  # an empty line is blank: no row, by design
    lines += [b"\xff\xfe\x00 not utf-8", b"[" * 100_000, b"42", b"null", b'"a string"',
              b'{"task": {"id": "t", "prompt": "p"}, "trajectories": [{"id": "a", "messages": "hi"}]}']
    return lines


@pytest.mark.slow
def test_hostile_lines_each_get_one_row_and_the_batch_finishes(scripted_server, tmp_path):
    good = [json.dumps(question_task(id=f"q{i}")).encode() for i in range(5)]
    hostile = _hostile_lines()
    src, out = tmp_path / "tasks.jsonl", tmp_path / "results.jsonl"
    lines = [x for pair in zip(hostile, good * len(hostile)) for x in pair]  # interleaved
    src.write_bytes(b"\n".join(lines) + b"\n\n   \n")  # blank lines get no row
    config = _config_file(tmp_path, scripted_server)

    done = _batch(config, src, out)
    assert done.returncode == 0, done.stderr[-2000:]
    rows = _rows(out)
    assert sorted(r["line"] for r in rows) == list(range(1, len(lines) + 1))  # exactly one row per line
    by_line = {r["line"]: r for r in rows}
    for number, raw in enumerate(lines, start=1):
        row = by_line[number]
        if raw in good:
            assert row["valid"] is True and row["status"] == "ok", row
        else:
            assert row["valid"] is False and row["status"] == "failed", row
            assert row["error"]["type"] == "TaskValidationError"
            assert f"line {number}" in row["error"]["message"] and row["error"]["field"]
    summary = json.loads(done.stdout)
    assert summary["total"] == len(lines) and summary["computed"] == len(lines)

    # a resume re-runs nothing: every line already has its row
    before = len(scripted_server.requests)
    again = _batch(config, src, out)
    assert again.returncode == 0, again.stderr[-2000:]
    assert json.loads(again.stdout)["computed"] == 0 and len(_rows(out)) == len(lines)
    assert len(scripted_server.requests) == before


@pytest.mark.slow
def test_task_timeout_covers_parsing_and_a_resume_keeps_the_row(scripted_server, tmp_path):
    big = question_task(id="big")
    big["task"]["metadata"] = {"blob": ["x" * 1000] * 40_000}  # ~40 MB to decode and validate
    src, out = tmp_path / "tasks.jsonl", tmp_path / "results.jsonl"
    src.write_text(json.dumps(big) + "\n" + json.dumps(question_task(id="small")) + "\n")
    config = _config_file(tmp_path, scripted_server)
    done = _batch(config, src, out, "--task-timeout", "0.01")
    assert done.returncode == 0, done.stderr[-2000:]
    rows = {r["line"]: r for r in _rows(out)}
    # json.loads holds the GIL, so the timeout may only fire once decoding is done: the row then
    # says the line was still being evaluated when its budget ran out; either way it failed, named.
    assert rows[1]["status"] == "failed" and rows[1]["error"]["type"] == "TimeoutError"
    stage = "parsing" if rows[1]["valid"] is None else "evaluating"
    assert rows[1]["calls"] == (None if stage == "evaluating" else 0)  # unknown is not zero
    assert f"line 1: {stage} took longer than the task timeout of 0.01 s" in rows[1]["error"]["message"]
    assert set(rows) == {1, 2}
    again = _batch(config, src, out, "--task-timeout", "0.01")
    assert json.loads(again.stdout)["computed"] == 0 and len(_rows(out)) == 2


@pytest.mark.slow
def test_bad_task_timeout_and_directory_input_exit_2(tmp_path, scripted_server):
    config = _config_file(tmp_path, scripted_server)
    src = tmp_path / "t.jsonl"
    src.write_text(json.dumps(question_task()) + "\n")
    for value in ("nan", "inf", "-1"):
        out = _batch(config, src, tmp_path / "o.jsonl", "--task-timeout", value)
        assert out.returncode == 2 and "--task-timeout" in out.stderr
    out = _batch(config, tmp_path, tmp_path / "o.jsonl")
    assert out.returncode == 2 and "is a directory" in out.stderr


@pytest.mark.slow
def test_second_writer_of_an_output_exits_2_naming_the_holder(tmp_path, scripted_server):
    config = _config_file(tmp_path, scripted_server)
    src, out = tmp_path / "t.jsonl", tmp_path / "results.jsonl"
    src.write_text(json.dumps(question_task()) + "\n")
    with OutputLock(out, input_path="elsewhere.jsonl"):
        blocked = _batch(config, src, out)
    assert blocked.returncode == 2
    assert f"pid {os.getpid()}" in blocked.stderr and "elsewhere.jsonl" in blocked.stderr
    assert "another oracle batch" in blocked.stderr
    assert not out.exists() or out.read_text() == ""  # it wrote nothing
    assert _batch(config, src, out).returncode == 0  # the lock went with its holder


@pytest.mark.slow
def test_two_concurrent_batches_never_duplicate_rows(scripted_server, tmp_path):
    scripted_server.latency_s = 0.01
    src, out = tmp_path / "t.jsonl", tmp_path / "results.jsonl"
    src.write_text("".join(json.dumps(question_task(id=f"q{i}")) + "\n" for i in range(200)))
    config = _config_file(tmp_path, scripted_server)
    first = _batch(config, src, out, "--concurrency", "4", wait=False)
    time.sleep(0.3)
    second = _batch(config, src, out, "--concurrency", "4", wait=False)
    codes = []
    for proc in (first, second):
        stdout, stderr = proc.communicate(timeout=300)
        codes.append((proc.returncode, stderr))
    print("concurrent exit codes", [c for c, _ in codes])
    assert codes[0][0] == 0, codes[0][1][-2000:]
    # the second either found the output locked (exit 2, a clear message) or, if it started after
    # the first finished, resumed everything and computed nothing
    assert codes[1][0] in (0, 2), codes[1][1][-2000:]
    if codes[1][0] == 2:
        assert "is being written by another oracle batch" in codes[1][1]
    keys = Counter(r["key"] for r in _rows(out))
    assert len(keys) == 200 and max(keys.values()) == 1


@pytest.mark.slow
def test_resume_drops_duplicate_rows_and_recomputes_nothing(tmp_path, scripted_server):
    config = _config_file(tmp_path, scripted_server)
    src, out = tmp_path / "t.jsonl", tmp_path / "results.jsonl"
    src.write_text("".join(json.dumps(question_task(id=f"q{i}")) + "\n" for i in range(10)))
    assert _batch(config, src, out).returncode == 0
    rows = out.read_text().splitlines()
    out.write_text("\n".join(rows + rows[:4] + rows[2:3]) + "\n")  # what two unlocked runs left
    assert prepare_output(out) == Counter({json.loads(r)["key"]: 1 for r in rows})
    assert out.read_text().splitlines() == rows  # first rows kept, order kept
    out.write_text("\n".join(rows + rows) + "\n")
    before = len(scripted_server.requests)
    again = _batch(config, src, out)
    assert again.returncode == 0 and json.loads(again.stdout)["computed"] == 0
    assert len(out.read_text().splitlines()) == 10 and len(scripted_server.requests) == before


def test_the_ray_worker_gives_hostile_lines_their_rows_too(tmp_path):
    """The Ray engine ships raw lines; its worker function parses them like the local engine
    (called directly here, without a cluster: tests/test_batch_ray.py runs the engine on one)."""
    from oracle.batch.ray_engine import _evaluate_chunk
    from oracle.batch.source import entry_to_wire, iter_entries
    from oracle.config.model import OracleConfig

    src = tmp_path / "t.jsonl"
    src.write_bytes(b"\n".join(_hostile_lines()) + b"\n")
    entries = list(iter_entries(src))
    rows = _evaluate_chunk(OracleConfig().model_dump_json(), None, [entry_to_wire(e) for e in entries], 4, 30.0)
    assert [r["line"] for r in rows] == [e.line for e in entries]
    assert [r["key"] for r in rows] == [e.key for e in entries]
    assert all(r["valid"] is False and r["error"]["type"] == "TaskValidationError" for r in rows)
