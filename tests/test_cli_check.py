"""``oracle check TASKFILE`` as a user runs it: real subprocesses, the real sandbox, exit codes."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.sandbox
ROOT = Path(__file__).resolve().parent.parent
SOLUTION = "def slugify(s):\n    return '-'.join(s.lower().split())\n"
TESTS = [
    {"kind": "assert", "name": "basic", "code": "assert slugify('Hello World') == 'hello-world'\n"},
    {"kind": "call", "name": "call", "call": "slugify('X y')", "expected": "x-y"},
    {"kind": "check", "name": "check", "code": "def check(candidate):\n    assert candidate('Q r') == 'q-r'\n"},
]
WRONG_EXPECTATION = {"kind": "assert", "name": "wrong", "code": "assert slugify('A') == 'WRONG'\n"}
NEEDS_NUMPY = {"kind": "assert", "name": "numpy", "code": "import numpy\nassert slugify('a') == 'a'\n"}


def _oracle(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "oracle", *args], capture_output=True, text=True, cwd=ROOT,
                          timeout=300)


def _file(tmp_path: Path, *tasks: dict, name: str = "tasks.jsonl") -> Path:
    path = tmp_path / name
    path.write_text("".join(json.dumps({"task": t, "trajectories": [{"id": "x", "code": "pass"}]}) + "\n"
                            for t in tasks))
    return path


def _task(tests: list, **extra) -> dict:
    return {"id": extra.pop("id", "slug"), "prompt": "Write slugify(s).", "entry_point": "slugify", "tests": tests,
            **extra}


def test_sound_tests_on_the_reference_exit_0_and_show_each_outcome(tmp_path):
    out = _oracle("check", str(_file(tmp_path, _task(TESTS, solution=SOLUTION))))
    assert out.returncode == 0, out.stdout + out.stderr
    lines = out.stdout.splitlines()
    assert lines[0] == "task slug: the tests on task.solution"
    assert [line.split()[:3] for line in lines[3:6]] == [["basic", "assert", "pass"], ["call", "call", "pass"],
                                                         ["check", "check", "pass"]]
    assert "no broken test of 3" in out.stdout


@pytest.mark.slow
def test_a_test_failing_on_the_reference_exits_3_naming_it_and_why(tmp_path):
    path = _file(tmp_path, _task([*TESTS, WRONG_EXPECTATION, NEEDS_NUMPY], solution=SOLUTION))
    out = _oracle("check", str(path))
    assert out.returncode == 3, out.stdout + out.stderr
    [wrong] = [line.split()[:4] for line in out.stdout.splitlines() if line.startswith("wrong ")]
    assert wrong == ["wrong", "assert", "fail", "(broken)"]
    assert "fails on the reference solution: assertion failed" in out.stdout
    assert "No module named 'numpy'" in out.stdout and "2 broken test(s) of 5" in out.stdout
    [row] = [json.loads(line) for line in _oracle("check", "--json", str(path)).stdout.splitlines()]
    assert row["ok"] is False and row["solution"] is True
    assert [(b["test"], b["reason"].split(":")[0]) for b in row["broken_tests"]] == [
        ("wrong", "fails on the reference solution"), ("numpy", "the test imports a module the test side lacks")]
    assert [(t["test"], t["outcome"], t["broken"]) for t in row["tests"]] == [
        ("basic", "pass", False), ("call", "pass", False), ("check", "pass", False), ("wrong", "fail", True),
        ("numpy", "broken", True)]


@pytest.mark.slow
def test_without_a_solution_only_what_is_broken_whatever_the_candidate_is_found(tmp_path):
    out = _oracle("check", "--json", str(_file(tmp_path, _task([*TESTS, WRONG_EXPECTATION, NEEDS_NUMPY]))))
    assert out.returncode == 3, out.stderr
    row = json.loads(out.stdout)
    assert row["solution"] is False and [b["test"] for b in row["broken_tests"]] == ["numpy"]
    assert {t["test"]: t["outcome"] for t in row["tests"]} == {
        "basic": "unverified", "call": "unverified", "check": "unverified", "wrong": "unverified", "numpy": "broken"}
    clean = _oracle("check", str(_file(tmp_path, _task(TESTS), name="clean.jsonl")))
    assert clean.returncode == 0 and "no task.solution" in clean.stdout


@pytest.mark.slow
@pytest.mark.parametrize("solution, why", [("def slugify(s) return s\n", "does not compile"),
                                           ("import not_installed_module_xyz\n" + SOLUTION, "does not load")])
def test_a_reference_that_cannot_load_exits_3_naming_task_solution(tmp_path, solution, why):
    out = _oracle("check", str(_file(tmp_path, _task(TESTS, solution=solution))))
    assert out.returncode == 3, out.stdout + out.stderr
    assert "error: task.solution: " in out.stdout and why in out.stdout


@pytest.mark.slow
def test_the_reference_runs_once_per_task_content_in_one_process(tmp_path):
    task = _task(TESTS, solution=SOLUTION)
    out = _oracle("check", "--json", str(_file(tmp_path, task, {**task, "id": "other"}, task)))
    rows = [json.loads(line) for line in out.stdout.splitlines()]
    assert [(r["task_id"], r["cached"]) for r in rows] == [("slug", False), ("other", False), ("slug", True)]
    assert rows[0]["tests"] == rows[2]["tests"]


def test_a_test_broken_on_sight_exits_2_naming_it(tmp_path):
    bad = {"kind": "assert", "code": "def test_basic():\n    assert slugify('a') == 'a'\n"}
    out = _oracle("check", str(_file(tmp_path, _task([TESTS[0], bad], solution=SOLUTION))))
    assert out.returncode == 2 and "task.tests[1]" in out.stderr and "kind: pytest" in out.stderr
