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


# -- a custom command that writes JUnit XML ---------------------------------------------------------

JUNIT_RUNNER = '''"""The repository's own runner (not pytest): each test_* function in tests/, as JUnit XML."""
import importlib
import pathlib
import sys
import time
import traceback
from xml.sax.saxutils import quoteattr

cases, bad = [], 0
for path in sorted(pathlib.Path("tests").glob("test_*.py")):
    module = importlib.import_module("tests." + path.stem)
    for name in sorted(n for n in vars(module) if n.startswith("test_")):
        started = time.perf_counter()
        try:
            getattr(module, name)()
            failure = ""
        except Exception as exc:  # noqa: BLE001
            bad += 1
            failure = "<failure message=%s>%s</failure>" % (
                quoteattr("%s: %s" % (type(exc).__name__, exc)), traceback.format_exc().replace("<", "&lt;"))
        cases.append('<testcase classname="tests.%s" name="%s" time="%.6f">%s</testcase>'
                     % (path.stem, name, time.perf_counter() - started, failure))
pathlib.Path("reports").mkdir(exist_ok=True)
pathlib.Path("reports/junit.xml").write_text(
    "<testsuites><testsuite name=\\"textkit\\">%s</testsuite></testsuites>" % "".join(cases))
print("ran %d tests, %d failed" % (len(cases), bad))
sys.exit(1 if bad else 0)
'''

PLAIN_TESTS = '''from textkit.truncate import truncate


def test_short_text_is_unchanged():
    assert truncate("hello", 10) == "hello"


def test_a_negative_limit_is_refused():
    try:
        truncate("hello", -1)
    except ValueError:
        return
    raise AssertionError("no ValueError")
'''
PLAIN_TESTS_NEW = PLAIN_TESTS + '''

def test_cut_text_fits_the_limit():
    assert truncate("hello world", 8) == "hello...", truncate("hello world", 8)
'''


def _evaluation(document: dict) -> dict:
    """The EvaluationResult in ``oracle evaluate --json``'s output: the batch-style row holds the
    OracleResult under ``result``, which holds the EvaluationResult under ``result``."""
    inner = document
    while "candidates" not in inner and isinstance(inner.get("result"), dict):
        inner = inner["result"]  # row -> OracleResult -> EvaluationResult (``-q`` leaves out the route)
    return inner


def test_oracle_evaluate_judges_a_custom_command_from_its_junit_report(tmp_path):
    """``command`` is the repository's own runner (unittest-style, not pytest) writing JUnit XML at
    ``junit_xml``: the right fix resolves, the base does not, a failure carries the runner's message,
    and the result says the outcomes came from JUnit (``report_source: junit``, weaker evidence: the
    candidate's process wrote that file) on every candidate and in the provenance."""
    ex = repo_attacks.example()
    base_files = {**{k: v for k, v in ex.BASE_FILES.items() if k != "tests/test_truncate.py"},
                  "tests/test_cut.py": PLAIN_TESTS, "run_tests.py": JUNIT_RUNNER}
    repo = tmp_path / "repo"
    base, fix = ex.build_repository(repo, base_files, {"textkit/truncate.py": ex.TRUNCATE_FIXED,
                                                      "tests/test_cut.py": PLAIN_TESTS_NEW})
    ex.git("bundle", "create", "-q", str(tmp_path / "textkit.bundle"), "main", cwd=repo)
    lying_runner = JUNIT_RUNNER.replace("            getattr(module, name)()\n",
                                        "            pass  # every test passes\n")
    assert lying_runner != JUNIT_RUNNER
    patches = {"right_fix": ex.make_patch(repo, base, {"textkit/truncate.py": ex.RIGHT_FIX}),
               "nothing": "", "edits_the_runner": ex.make_patch(repo, base, {"run_tests.py": lying_runner})}
    document = ex.task_document(base, ex.test_patch(repo, base, fix), patches, bundle="textkit.bundle")
    document["task"]["tests"] = [{
        "kind": "repo_tests", "name": "runner", "timeout_s": 60, "command": ["python3", "run_tests.py"],
        "junit_xml": "reports/junit.xml", "fail_to_pass": ["tests/test_cut.py::test_cut_text_fits_the_limit"],
        "pass_to_pass": ["tests/test_cut.py::test_short_text_is_unchanged",
                         "tests/test_cut.py::test_a_negative_limit_is_refused",
                         "tests/test_words.py::test_word_count"]}]
    (tmp_path / "task.json").write_text(json.dumps(document))
    done = _cli("evaluate", "--json", "--no-route", str(tmp_path / "task.json"), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    result = _evaluation(json.loads(done.stdout))
    assert result["status"] == "ok", result.get("error")
    by_id = {c["id"]: c for c in result["candidates"]}
    verdicts = {cid: (c["passed"], c["details"]["fail_to_pass"], c["details"]["pass_to_pass"])
                for cid, c in by_id.items()}
    # The runner the command names is protected like a test file: its edit is restored, the rest judged.
    assert verdicts == {"right_fix": (True, "1/1", "3/3"), "nothing": (False, "0/1", "3/3"),
                        "edits_the_runner": (False, "0/1", "3/3")}, \
        {k: c["details"].get("summary") for k, c in by_id.items()}
    assert by_id["edits_the_runner"]["details"]["restored"] == ["run_tests.py"]
    cut = next(t for t in by_id["nothing"]["details"]["tests"] if t["group"] == "fail_to_pass")
    assert cut["outcome"] == "failed" and "hello wo..." in cut["message"]  # the runner's own message
    for c in by_id.values():
        assert c["details"]["run"]["report_source"] == "junit"
    execution = result["provenance"]["execution"]
    assert execution["integrity"] == "shared_process"
    assert execution["repository"]["report_source"] == "junit"
    assert "weaker" in execution["repository"]["report_source_note"]
