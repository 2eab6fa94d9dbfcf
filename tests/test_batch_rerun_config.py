"""Issue 29, "reruns and resumes": a batch rerun into the same output under another config.

Every row records the config hash it was computed under. A rerun under another config is refused
before anything in the file changes (naming both hashes), or recomputes those rows with
``--recompute``, never losing one: each old row stays until its new one is written. Real CLI runs,
real sandbox for the code lines, the scripted HTTP server (and a closed loopback port) for the judge.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.sandbox


def code_line(task_id: str, answer: str = "    return a + b\n") -> dict:
    return {"task": {"id": task_id, "prompt": "def add(a, b):\n    \"\"\"Return a + b.\"\"\"\n", "entry_point": "add",
                     "tests": [{"kind": "call", "call": "add(2, 3)", "expected": 5}]},
            "trajectories": [{"id": "c", "answer": answer}]}


def judge_line(task_id: str) -> dict:
    return {"task": {"id": task_id, "prompt": f"Explain {task_id}.", "evaluator": "llm_judge"},
            "trajectories": [{"id": "a", "answer": "Because."}]}


def cli(*args: str, cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    base = {k: v for k, v in os.environ.items() if not k.startswith("ORACLE_")}
    return subprocess.run([sys.executable, "-m", "oracle", *args], capture_output=True, text=True, cwd=cwd,
                          env={**base, **(env or {})}, timeout=300)


def config_hash(cwd: Path, env: dict[str, str] | None = None) -> str:
    shown = cli("config", "show", "--json", cwd=cwd, env=env)
    return json.loads(shown.stdout)["config_hash"]


def rows(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


@pytest.mark.slow
def test_a_rerun_under_another_config_is_refused_and_the_file_left_as_it_was(tmp_path):
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text("".join(json.dumps(code_line(f"t{n}")) + "\n" for n in range(3)))
    out = tmp_path / "rows.jsonl"
    first = cli("batch", str(tasks), "-o", str(out), "--no-store", cwd=tmp_path)
    assert first.returncode == 0, first.stderr
    old = config_hash(tmp_path)
    assert {r["config_hash"] for r in rows(out)} == {old}
    # the file as an interrupted run could leave it: a cut last line after the rows
    with out.open("ab") as fh:
        fh.write(b'{"key": "half a ro')
    before = out.read_bytes()
    changed = {"ORACLE_ROUTING__THRESHOLD": "0.3"}
    new = config_hash(tmp_path, changed)
    assert new != old
    refused = cli("batch", str(tasks), "-o", str(out), "--no-store", cwd=tmp_path, env=changed)
    assert refused.returncode == 2, refused.stderr
    assert f"3 row(s) computed under another config (3 under config {old}); this run's config is {new}" \
        in refused.stderr and "--recompute" in refused.stderr
    assert out.read_bytes() == before  # not a byte changed, the cut line included
    assert not out.with_name(out.name + ".history.json").exists()


@pytest.mark.slow
def test_recompute_replaces_each_old_row_and_keeps_one_row_per_line(tmp_path):
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text("".join(json.dumps(code_line(f"t{n}")) + "\n" for n in range(3)))
    out = tmp_path / "rows.jsonl"
    assert cli("batch", str(tasks), "-o", str(out), "--no-store", cwd=tmp_path).returncode == 0
    changed = {"ORACLE_ROUTING__THRESHOLD": "0.3"}
    again = cli("batch", str(tasks), "-o", str(out), "--no-store", "--recompute", cwd=tmp_path, env=changed)
    assert again.returncode == 0, again.stderr
    new = config_hash(tmp_path, changed)
    assert f"3 input lines, 0 resumed, 3 computed (3 recomputed under config {new})" in again.stdout
    got = rows(out)
    assert len(got) == 3 and {r["config_hash"] for r in got} == {new}
    assert {r["result"]["route"]["config_hash"] for r in got} == {new}
    # and a plain rerun under the new config now resumes them all
    resumed = cli("batch", str(tasks), "-o", str(out), "--no-store", cwd=tmp_path, env=changed)
    assert resumed.returncode == 0 and "3 resumed, 0 computed" in resumed.stdout, resumed.stderr


@pytest.mark.slow
def test_an_interrupted_recompute_loses_no_row(tmp_path, scripted_server):
    """A recompute stopped halfway (here: the judge's endpoint goes down) leaves every line with a
    row, old or new; the next recompute finishes the job."""
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text(json.dumps(code_line("code")) + "\n" + json.dumps(judge_line("judged")) + "\n")
    out = tmp_path / "rows.jsonl"
    served = {"ORACLE_BASE_URL": scripted_server.base_url, "ORACLE_MODEL": "scripted-model"}
    assert cli("batch", str(tasks), "-o", str(out), "--no-store", cwd=tmp_path, env=served).returncode == 0
    old = {r["task_id"]: r["config_hash"] for r in rows(out)}
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    down = {"ORACLE_BASE_URL": f"http://127.0.0.1:{port}/v1", "ORACLE_MODEL": "scripted-model"}
    stopped = cli("batch", str(tasks), "-o", str(out), "--no-store", "--recompute", "--concurrency", "1",
                  cwd=tmp_path, env=down)
    assert stopped.returncode == 2 and "the run stopped" in stopped.stderr, stopped.stderr[-2000:]
    now = {r["task_id"]: r["config_hash"] for r in rows(out)}
    new = config_hash(tmp_path, down)
    assert sorted(now) == ["code", "judged"]                   # one row per line, none lost
    assert now == {"code": new, "judged": old["judged"]}        # the judged line keeps its old row
    refused = cli("batch", str(tasks), "-o", str(out), "--no-store", cwd=tmp_path, env=down)
    assert refused.returncode == 2 and f"1 under config {old['judged']}" in refused.stderr


@pytest.mark.slow
def test_rows_written_before_rows_carried_their_hash_resume_by_their_route(tmp_path):
    """An output from an earlier version (no ``config_hash`` field) is read by its route's hash."""
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text(json.dumps(code_line("t0")) + "\n")
    out = tmp_path / "rows.jsonl"
    assert cli("batch", str(tasks), "-o", str(out), "--no-store", cwd=tmp_path).returncode == 0
    legacy = [{k: v for k, v in r.items() if k != "config_hash"} for r in rows(out)]
    out.write_text("".join(json.dumps(r) + "\n" for r in legacy))
    resumed = cli("batch", str(tasks), "-o", str(out), "--no-store", cwd=tmp_path)
    assert resumed.returncode == 0 and "1 resumed, 0 computed" in resumed.stdout, resumed.stderr
    refused = cli("batch", str(tasks), "-o", str(out), "--no-store", cwd=tmp_path,
                  env={"ORACLE_ROUTING__THRESHOLD": "0.3"})
    assert refused.returncode == 2 and "1 row(s) computed under another config" in refused.stderr
