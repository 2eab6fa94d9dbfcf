"""Repository tasks end to end through the CLI (real subprocesses, real sandbox, real git): the
example of examples/repo_patch/ with `oracle evaluate`, and `oracle batch` over two repository
tasks, resumed after its output lost a row."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests import repo_attacks

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "examples" / "repo_patch"

pytestmark = [pytest.mark.sandbox, pytest.mark.slow]


def _cli(*args: str, cwd: Path = ROOT, timeout: int = 600) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ORACLE_")}
    return subprocess.run([sys.executable, "-m", "oracle", *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=timeout)


def _heads(bundle: Path) -> str:
    return subprocess.run(["git", "bundle", "list-heads", str(bundle)], capture_output=True, text=True,
                          check=True).stdout


def test_the_example_is_what_build_writes(tmp_path):
    done = subprocess.run([sys.executable, str(EXAMPLE / "build.py"), str(tmp_path)], capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert json.loads((tmp_path / "task.json").read_text()) == json.loads((EXAMPLE / "task.json").read_text())
    assert _heads(tmp_path / "textkit.bundle") == _heads(EXAMPLE / "textkit.bundle")
    for diff in (EXAMPLE / "candidates").glob("*.diff"):
        assert (tmp_path / "candidates" / diff.name).read_text() == diff.read_text()


def test_oracle_evaluate_on_the_example():
    done = _cli("evaluate", "--json", "examples/repo_patch/task.json")
    assert done.returncode == 0, done.stderr
    row = json.loads(done.stdout)  # the batch row, the OracleResult under "result"
    assert row["evaluator"] == "verifier" and row["task_id"] == "textkit-truncate"
    res = row["result"]
    assert res["route"]["evaluator"] == "verifier"
    assert "has_repository" in json.dumps(res["route"])  # the routing signal, named in the trace
    result = res["result"]
    assert result["status"] == "ok", result.get("error")
    assert result["provenance"]["execution"]["integrity"] == "shared_process"
    assert "\"isolated\"" not in done.stdout  # never claimed, anywhere in the result
    by_id = {c["id"]: c for c in result["candidates"]}
    assert result["best"] == ["right_fix"] and result["ranking"][0] == "right_fix"
    shares = {cid: (c["details"]["fail_to_pass"], c["details"]["pass_to_pass"], c["passed"])
              for cid, c in by_id.items()}
    assert shares == {"right_fix": ("2/2", "6/6", True), "wrong_fix": ("1/2", "5/6", False),
                      "edits_the_test": ("0/2", "6/6", False), "conftest_hook": ("0/2", "0/6", False)}
    wrong = {t["node_id"]: t for t in by_id["wrong_fix"]["details"]["tests"]}
    exact = wrong["tests/test_truncate.py::test_text_that_fits_exactly_is_unchanged"]
    assert exact["outcome"] == "failed" and "'he...'" in exact["message"]  # pytest's own report of it
    assert "tests/conftest.py" in by_id["conftest_hook"]["details"]["failed_because"]
    assert by_id["edits_the_test"]["details"]["restored"] == ["tests/test_truncate.py"]
    assert by_id["edits_the_test"]["details"]["summary"].startswith("its changes to tests/test_truncate.py were")
    tampering = [c for c in result["concerns"] if c["kind"] == "tampering"]
    assert len(tampering) == 1
    files = tampering[0]["evidence"]["files"]
    assert {cid: [(f["path"], f["action"]) for f in fs] for cid, fs in files.items()} == {
        "edits_the_test": [("tests/test_truncate.py", "restored")],
        "conftest_hook": [("tests/conftest.py", "failed")]}


def test_oracle_batch_on_two_repository_tasks_resumed(tmp_path):
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text(repo_attacks.task_line(tmp_path, "textkit-a", ["right_fix", "conftest_rewrite"]) + "\n"
                     + repo_attacks.task_line(tmp_path, "textkit-b", ["early_exit", "fix_and_own_test"]) + "\n")
    out = tmp_path / "results.jsonl"
    first = _cli("batch", str(tasks), "-o", str(out), "--no-store")
    assert first.returncode == 0, first.stderr
    rows = {json.loads(line)["line"]: line for line in out.read_text().splitlines()}  # in the order they finished
    assert sorted(rows) == [1, 2] and [json.loads(rows[n])["task_id"] for n in (1, 2)] == ["textkit-a", "textkit-b"]
    # As after a crash that lost the second line's row: the same command finishes the rest, the first row kept.
    out.write_text(rows[1] + "\n")
    again = _cli("batch", str(tasks), "-o", str(out), "--no-store")
    assert again.returncode == 0, again.stderr
    lines = out.read_text().splitlines()
    assert lines[0] == rows[1] and len(lines) == 2 and json.loads(lines[1])["line"] == 2
    verdicts = {}
    for row in map(json.loads, lines):
        result = row["result"]["result"]
        verdicts[row["task_id"]] = {c["id"]: c["passed"] for c in result["candidates"]}
    assert verdicts == {"textkit-a": {"right_fix": True, "conftest_rewrite": False},
                        "textkit-b": {"early_exit": False, "fix_and_own_test": True}}


def test_oracle_check_on_repository_tasks(tmp_path):
    """The tests at the base commit with the test patch: the example's are sound; a task listing a
    test the base already passes as fail-to-pass, and one the base fails as pass-to-pass, is broken."""
    done = _cli("check", "--json", "examples/repo_patch/task.json")
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    report = report[0] if isinstance(report, list) else report
    assert report["ok"] and report["subject"].startswith("the base commit")
    outcomes = {r["test"]: r["outcome"] for r in report["tests"]}
    ex = repo_attacks.example()
    assert [outcomes[n] for n in ex.FAIL_TO_PASS] == ["failed", "failed"]
    assert all(outcomes[n] == "passed" for n in ex.PASS_TO_PASS)
    task = json.loads((EXAMPLE / "task.json").read_text())
    task["task"]["repository"]["bundle"] = str(EXAMPLE / "textkit.bundle")
    test = task["task"]["tests"][0]
    test["fail_to_pass"], test["pass_to_pass"] = ([ex.PASS_TO_PASS[0]],
                                                  [ex.FAIL_TO_PASS[0], *ex.PASS_TO_PASS[1:]])
    (tmp_path / "mislabelled.json").write_text(json.dumps(task))
    done = _cli("check", "--json", str(tmp_path / "mislabelled.json"))
    assert done.returncode == 3, done.stderr
    report = json.loads(done.stdout)
    report = report[0] if isinstance(report, list) else report
    reasons = {b["test"]: b["reason"] for b in report["broken_tests"]}
    assert set(reasons) == {ex.PASS_TO_PASS[0], ex.FAIL_TO_PASS[0]}
    assert "not a fail-to-pass test" in reasons[ex.PASS_TO_PASS[0]]
    assert reasons[ex.FAIL_TO_PASS[0]].startswith("failed at the base commit")


def test_oracle_serve_judges_a_repository_task(tmp_path):
    """Through the HTTP service (a real ``oracle serve`` process): the task names its bundle by an
    absolute path (a request has no file to be relative to)."""
    import httpx

    from tests.serve_support import dumps, need_serve_extra, serve

    need_serve_extra()
    task = json.loads((EXAMPLE / "task.json").read_text())
    task["task"]["repository"]["bundle"] = str(EXAMPLE / "textkit.bundle")
    with serve(tmp_path) as served:
        reply = httpx.post(served.base_url + "/v1/evaluate", content=dumps(task), timeout=300)
    assert reply.status_code == 200, reply.text
    job = reply.json()
    assert job["state"] == "done" and job["result"]["status"] == "ok", job
    result = job["result"]["result"]
    assert result["best"] == ["right_fix"]
    assert result["provenance"]["execution"]["integrity"] == "shared_process"
    assert {c["id"]: c["passed"] for c in result["candidates"]} == {
        "right_fix": True, "wrong_fix": False, "edits_the_test": False, "conftest_hook": False}
