"""The CLI as a user runs it: real subprocesses, exit codes, JSON on stdout, errors on stderr."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.data.tasks import code_task, open_task, question_task

ROOT = Path(__file__).resolve().parent.parent


def oracle(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "oracle", *args], capture_output=True, text=True,
                          cwd=cwd, timeout=120)


def test_route_jsonl_one_line_per_task(tmp_path):
    path = tmp_path / "tasks.jsonl"
    path.write_text("\n".join(json.dumps(d) for d in (code_task(), question_task(), open_task())) + "\n")
    out = oracle("route", str(path), "--json")
    assert out.returncode == 0, out.stderr
    rows = [json.loads(line) for line in out.stdout.splitlines()]
    assert [r["route"]["evaluator"] for r in rows] == ["verifier", "decision_judge", "llm_judge"]
    assert all(r["route"]["schema_version"] == "2" and r["route"]["config_hash"] for r in rows)


def test_route_table_for_people(tmp_path):
    path = tmp_path / "task.yaml"
    import yaml
    path.write_text(yaml.safe_dump(code_task()))
    out = oracle("route", str(path))
    assert out.returncode == 0, out.stderr
    assert "-> verifier" in out.stdout and "execution_evidence" in out.stdout and "TOTAL" in out.stdout


def test_bad_input_exits_2_naming_field_and_line(tmp_path):
    bad = code_task()
    bad["task"]["tests"] = [{"kind": "unit"}]
    path = tmp_path / "tasks.jsonl"
    path.write_text(json.dumps(code_task()) + "\n" + json.dumps(bad) + "\n")
    out = oracle("evaluate", str(path), "--json")
    assert out.returncode == 2
    assert "line 2" in out.stderr and "task.tests[0]" in out.stderr
    assert out.stdout == ""  # nothing ran


def test_missing_file_and_bad_config_exit_2(tmp_path):
    assert oracle("route", str(tmp_path / "nope.json")).returncode == 2
    cfg = tmp_path / "c.yaml"
    cfg.write_text("routing:\n  threshhold: 0.3\n")
    out = oracle("--config", str(cfg), "config", "show")
    assert out.returncode == 2 and "routing.threshhold" in out.stderr
    cfg.write_text("routing:\n  policies:\n    magic: {weight: 1}\n")
    for command in (["config", "show"], ["route", str(ROOT / "examples" / "n_plus_one" / "task.json")]):
        out = oracle("--config", str(cfg), *command)
        assert out.returncode == 2 and "routing.policies: unknown policies ['magic']" in out.stderr, out.stderr


def test_config_show_reflects_file_and_env(tmp_path):
    cfg = tmp_path / "c.toml"
    cfg.write_text("[routing]\nthreshold = 0.3\n[routing.policies.difficulty]\nweight = 0\n")
    out = oracle("--config", str(cfg), "config", "show", "--json")
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    assert data["config"]["routing"]["threshold"] == 0.3
    default = json.loads(oracle("config", "show", "--json").stdout)
    assert data["config_hash"] != default["config_hash"]


def test_evaluate_infeasible_override_gives_failed_row_with_escalation(tmp_path):
    path = tmp_path / "t.json"
    path.write_text(json.dumps(open_task(evaluator="verifier")))
    out = oracle("evaluate", str(path), "--json", "--no-store")
    assert out.returncode == 3, out.stderr                    # a failed task exits 3 (issue 29)
    assert "1 of 1 task(s) failed" in out.stderr and "--allow-failures" in out.stderr
    row = json.loads(out.stdout)
    assert row["status"] == "failed" and row["evaluator"] is None and row["result"]["route"]["evaluator"] is None
    assert row["escalation"]["reason"] == "no_feasible_evaluator"
    assert "tests" in row["result"]["escalation"]["question"]


def test_history_feeds_prior_hardness(tmp_path):
    from oracle.routing._history import hardness_from_rows

    assert hardness_from_rows([{"task_id": "a", "status": "ok"}, {"task_id": "a", "status": "failed"},
                               {"task_id": "b", "status": "ok", "escalation": {"id": "e"}},
                               {"task_id": None, "status": "failed"}]) == {"a": 0.5, "b": 1.0}
    hist = tmp_path / "results.jsonl"
    hist.write_text(json.dumps({"task_id": "essay", "status": "failed"}) + "\n")
    task = tmp_path / "t.json"
    task.write_text(json.dumps(open_task()))
    row = json.loads(oracle("route", str(task), "--json", "--history", str(hist)).stdout)
    assert row["route"]["signals"]["prior_hardness"] == 1.0
    assert any(v["policy"] == "difficulty" for v in row["route"]["votes"])


@pytest.mark.slow
def test_evaluate_files_blocking_request_in_store_as_pending(tmp_path):
    path = tmp_path / "t.json"
    path.write_text(json.dumps(open_task(evaluator="verifier")))
    store = tmp_path / "esc.sqlite"
    out = oracle("evaluate", str(path), "--json", "--store", str(store))
    assert out.returncode == 0, out.stderr
    row = json.loads(out.stdout)
    assert row["status"] == "pending" and row["escalation"]["blocking"]
    listed = oracle("escalations", "list", "--store", str(store))
    assert row["escalation"]["id"] in listed.stdout, listed.stdout + listed.stderr


def test_render_gives_each_candidate_a_reason():
    from oracle.cli.render import why as _why

    assert _why({"summary": "2/3 tests passed"}) == "2/3 tests passed"
    assert _why({"questions": [{"question_id": "team", "selected": "billing", "confidence": 0.8}]}) \
        == "team=billing (0.80)"
    assert _why({"criteria": {"c1": {"criterion": "Has three lines", "score": 3.0}}}) == "Has three lines: 3.00"
    assert _why({"criteria": [{"criterion": "Polite", "probability": 0.25, "met": False}]}) == "Polite: 0.25"
    assert _why({}) == ""


def test_version_is_the_installed_package_version():
    from importlib.metadata import version

    out = oracle("--version")
    assert out.returncode == 0 and out.stdout.strip() == f"oracle-router {version('oracle-router')}"


def test_a_bad_log_level_exits_2_naming_it_and_case_does_not_matter(tmp_path):
    out = oracle("--log-level", "loud", "config", "show")
    assert out.returncode == 2 and "--log-level" in out.stderr and "'loud'" in out.stderr
    assert out.stdout == ""
    assert oracle("--log-level", "DEBUG", "config", "show", "--json").returncode == 0


def _reference_tasks(tmp_path: Path, n: int = 3) -> Path:
    """Tasks the verifier checks against a reference answer: fast, no model, no sandbox."""
    path = tmp_path / "tasks.jsonl"
    path.write_text("".join(json.dumps({"task": {"id": f"r{i}", "prompt": "What is 2+2?", "reference": "4",
                                                 "evaluator": "verifier"},
                                        "trajectories": [{"id": "good", "answer": "4"},
                                                         {"id": "bad", "answer": "5"}]}) + "\n"
                            for i in range(1, n + 1)))
    return path


@pytest.mark.slow
def test_no_route_shows_verdicts_without_the_routing_table(tmp_path):
    path = _reference_tasks(tmp_path)
    full = oracle("evaluate", str(path))
    assert full.returncode == 0, full.stderr
    assert "TOTAL" in full.stdout and "policy" in full.stdout
    for flag in ("--no-route", "--quiet", "-q"):
        quiet = oracle("evaluate", str(path), flag)
        assert quiet.returncode == 0, quiet.stderr
        assert "TOTAL" not in quiet.stdout and "policy" not in quiet.stdout
        assert quiet.stdout.count("task r") == 3 and quiet.stdout.count("best: good ") == 3
        assert "good       1.000  PASS" in quiet.stdout and "bad        0.000  FAIL" in quiet.stdout
    rows = [json.loads(line) for line in oracle("evaluate", str(path), "--json", "-q").stdout.splitlines()]
    assert len(rows) == 3 and all("route" not in r["result"] and r["result"]["result"]["best"] == ["good"]
                                  and r["best"] == ["good"] and r["evaluator"] == "verifier" for r in rows)
    full_rows = [json.loads(line) for line in oracle("evaluate", str(path), "--json").stdout.splitlines()]
    assert all("route" in r["result"] for r in full_rows)


@pytest.mark.slow
def test_progress_off_a_terminal_only_when_asked(tmp_path):
    path = _reference_tasks(tmp_path)
    default = oracle("evaluate", str(path), "--json")
    assert default.returncode == 0 and "evaluate:" not in default.stderr
    asked = oracle("evaluate", str(path), "--json", "--progress")
    assert asked.returncode == 0 and "evaluate: 3/3 done" in asked.stderr
    assert len(asked.stdout.splitlines()) == 3 and "evaluate:" not in asked.stdout
    refused = oracle("evaluate", str(path), "--json", "--no-progress")
    assert "evaluate:" not in refused.stderr


def _run_with_terminal_stderr(args: list[str]) -> tuple[int, str, str]:
    """Run the CLI with stderr on a pseudo-terminal (as in an interactive shell), stdout on a pipe."""
    import os
    import pty
    import select

    master, slave = pty.openpty()
    proc = subprocess.Popen([sys.executable, "-m", "oracle", *args], stdout=subprocess.PIPE, stderr=slave,
                            cwd=ROOT, env={**os.environ, "TERM": "xterm"})
    os.close(slave)
    chunks: list[bytes] = []
    try:
        while True:
            ready, _, _ = select.select([master], [], [], 60)
            if not ready:
                break
            try:
                data = os.read(master, 4096)
            except OSError:  # EIO: the child closed its end
                break
            if not data:
                break
            chunks.append(data)
    finally:
        os.close(master)
    stdout = proc.communicate(timeout=60)[0].decode()
    return proc.returncode, stdout, b"".join(chunks).decode(errors="replace")


@pytest.mark.slow
def test_progress_bar_on_a_terminal_goes_to_stderr_only(tmp_path):
    path = _reference_tasks(tmp_path)
    code, stdout, terminal = _run_with_terminal_stderr(["evaluate", str(path), "--json"])
    assert code == 0
    assert "evaluate" in terminal and "3/3" in terminal and "failed=0" in terminal
    assert "\x1b" not in stdout and len(stdout.splitlines()) == 3
    code, stdout, terminal = _run_with_terminal_stderr(["evaluate", str(path), "--json", "--no-progress"])
    assert code == 0 and "3/3" not in terminal and len(stdout.splitlines()) == 3
    one = tmp_path / "one.json"
    one.write_text(path.read_text().splitlines()[0])
    code, stdout, terminal = _run_with_terminal_stderr(["evaluate", str(one), "--json"])
    assert code == 0 and "1/1" not in terminal  # one task: nothing to show progress of
