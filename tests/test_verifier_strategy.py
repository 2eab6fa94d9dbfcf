"""The verifier strategy end to end: every test kind, code extraction, reference checks, scoring,
ties, infrastructure failures, and the N+1 example. Real sandbox runs throughout."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from oracle.config.model import OracleConfig
from oracle.results.result import Status
from oracle._evaluators import evaluator_factory
from oracle.strategies.protocol import EvaluationContext
from oracle.tasks.task import Task, Trajectory
from oracle.tasks.files import load_tasks
from oracle.strategies.verifier.extract import extract_code

pytestmark = pytest.mark.sandbox
ROOT = Path(__file__).resolve().parent.parent

ADD_PROMPT = 'def add(a, b):\n    """Return a + b."""\n'


async def evaluate(task: Task, *trajectories: Trajectory, **verifier):
    config = OracleConfig(verifier={"timeout_s": 5, **verifier})
    strategy = evaluator_factory("verifier")()
    assert strategy.name == "verifier"
    return await strategy.evaluate(EvaluationContext(task=task, trajectories=trajectories, config=config))


def outcomes(result, cid):
    return [t["outcome"] for t in result.candidate(cid).details["tests"]]


@pytest.mark.slow
async def test_every_test_kind_and_outcome():
    task = Task(id="kinds", prompt=ADD_PROMPT, entry_point="add", tests=[
        {"kind": "assert", "code": "assert add(1, 2) == 3", "name": "a"},
        {"kind": "call", "call": "add(0.1, 0.2)", "expected": 0.3, "name": "c"},
        {"kind": "check", "code": "def check(candidate):\n    assert candidate(2, 2) == 4\n", "name": "k"},
        {"kind": "io", "stdin": "3 4\n", "stdout": "7", "name": "io"},
    ])
    good = Trajectory(id="good", code="def add(a, b):\n    return a + b\n"
                      "if __name__ == '__main__':\n    import sys\n    d = sys.stdin.read().split()\n"
                      "    if d:\n        print(int(d[0]) + int(d[1]))\n")
    wrong = Trajectory(id="wrong", answer="    return a - b\n")  # a HumanEval-style body
    crash = Trajectory(id="crash", code="def add(a, b):\n    raise RuntimeError('boom')\n")
    slow = Trajectory(id="slow", answer="```python\ndef add(a, b):\n    while True:\n        pass\n```")
    result = await evaluate(Task(**{**task.model_dump(), "tests": [
        {**t.model_dump(), "timeout_s": 1.5} for t in task.tests]}), good, wrong, crash, slow)
    assert result.status is Status.ok
    assert outcomes(result, "good") == ["pass"] * 4
    assert outcomes(result, "wrong")[:3] == ["fail"] * 3
    assert result.candidate("wrong").details["code_source"] == "answer"
    assert "expected 0.3, got" in result.candidate("wrong").details["tests"][1]["message"]
    assert outcomes(result, "crash")[:3] == ["error"] * 3
    assert "RuntimeError" in result.candidate("crash").details["tests"][0]["message"]
    assert outcomes(result, "slow")[:3] == ["timeout"] * 3
    assert result.best == ["good"] and result.ranking[0] == "good"
    assert result.provenance.isolation_level in ("namespaces", "landlock")
    assert result.provenance.execution.backend and result.provenance.mode == "tests"
    assert result.calls == 16


async def test_weights_score_and_float_tolerance():
    task = Task(id="w", prompt="", tests=[
        {"kind": "call", "call": "f()", "expected": 1.0, "weight": 3, "tolerance": 0.01},
        {"kind": "call", "call": "f() * 2", "expected": 3, "weight": 1}])
    result = await evaluate(task, Trajectory(id="x", code="def f():\n    return 1.005\n"))
    cand = result.candidate("x")
    assert outcomes(result, "x") == ["pass", "fail"]
    assert cand.score == pytest.approx(0.75) and cand.passed is False


async def test_ties_are_reported_and_broken_by_input_order():
    task = Task(id="t", prompt="", tests=[{"kind": "assert", "code": "assert f() == 1"}])
    result = await evaluate(task, Trajectory(id="b", code="def f(): return 1"),
                            Trajectory(id="a", code="f = lambda: 1"),
                            Trajectory(id="c", code="def f(): return 2"))
    assert result.best == ["b", "a"]
    assert result.ranking == ["b", "a", "c"]
    assert result.details["ties"] == [["b", "a"]]


async def test_exit_zero_before_the_tests_is_not_a_pass():
    task = Task(id="t", prompt="", tests=[{"kind": "assert", "code": "assert f() == 1"}])
    cheat = Trajectory(id="cheat", code="import os, sys\nprint('@@ORACLE 0 {\"kind\": \"pass\"}', file=sys.stderr)\n"
                                         "os._exit(0)\n")
    result = await evaluate(task, cheat)
    assert outcomes(result, "cheat") == ["error"]
    assert "ended before it finished loading" in result.candidate("cheat").details["tests"][0]["message"]


async def test_memory_hog_is_an_error_with_reason():
    task = Task(id="t", prompt="", tests=[{"kind": "assert", "code": "x = bytearray(3 << 30)"}])
    result = await evaluate(task, Trajectory(id="hog", code="pass"), memory_mb=256)
    test = result.candidate("hog").details["tests"][0]
    assert test["outcome"] == "error"
    assert "memory" in test["message"].lower()


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("node") is None, reason="node not installed")
async def test_javascript_candidates_run_with_node():
    task = Task(id="js", prompt="Write add(a, b).", language="javascript", entry_point="add", tests=[
        {"kind": "assert", "code": "assert.strictEqual(add(2, 3), 5)"},
        {"kind": "call", "call": "add(1, 1)", "expected": 2},
        {"kind": "check", "code": "function check(c) { assert.strictEqual(c(1, 2), 3); }"},
        {"kind": "io", "stdin": "", "stdout": "ready"}])
    good = Trajectory(id="good", answer="```js\nfunction add(a, b) { return a + b; }\nconsole.log('ready');\n```")
    bad = Trajectory(id="bad", code="const add = (a, b) => a * b; console.log('ready');")
    result = await evaluate(task, good, bad)
    assert outcomes(result, "good") == ["pass"] * 4
    assert outcomes(result, "bad") == ["fail", "fail", "fail", "pass"]


async def test_unsupported_language_is_our_failure_naming_what_is_supported():
    task = Task(id="rs", prompt="", language="rust", tests=[{"kind": "assert", "code": "assert!(true);"}])
    result = await evaluate(task, Trajectory(id="r", code="fn main() {}"))
    assert result.status is Status.failed
    assert "rust" in result.error.message and "python" in result.error.message
    assert all(c.score is None for c in result.candidates)


async def test_harness_that_cannot_start_is_a_failed_result_not_a_zero():
    """An "interpreter" that does not run Python is refused before any worker starts, with why."""
    task = Task(id="t", prompt="", tests=[{"kind": "assert", "code": "assert True"}])
    result = await evaluate(task, Trajectory(id="x", code="pass"), python_executable="/usr/bin/false")
    assert result.status is Status.failed
    assert result.error.type == "InterpreterUnusable"
    assert "verifier.python_executable: /usr/bin/false does not run as a Python interpreter" in result.error.message
    assert all(c.score is None for c in result.candidates)


async def test_identical_errors_everywhere_point_at_the_environment():
    # (A test that imports a module the test side lacks is broken, the task's fault:
    # tests/test_broken_tests_runtime.py. Candidates that all need a module the machine lacks point here.)
    task = Task(id="t", prompt="", tests=[{"kind": "assert", "code": "assert f() == 1"},
                                          {"kind": "assert", "code": "assert f() == 2"}])
    needs = "import not_installed_module_xyz\ndef f():\n    return 1\n"
    result = await evaluate(task, Trajectory(id="a", code=needs), Trajectory(id="b", code=needs))
    assert result.status is Status.failed
    assert "identically" in result.error.message


async def test_check_tests_need_an_entry_point():
    task = Task(id="t", prompt="", tests=[{"kind": "check", "code": "def check(c): pass"}])
    result = await evaluate(task, Trajectory(id="a", code="x = 1"))
    assert result.status is Status.failed and "task.entry_point" in result.error.message


@pytest.mark.parametrize("mode,reference,answer,ok", [
    ("exact", "Paris", "  Paris ", True), ("exact", "Paris", "paris", False),
    ("normalized", "The Eiffel Tower!", "the eiffel   tower", True),
    ("numeric", "3.14159", "It is about 3.1416.", False), ("numeric", "1,000", "1000.0000001", True),
    ("regex", r"\d{4}-\d{2}-\d{2}", "2024-01-31", True), ("regex", r"\d{4}", "year 2024", False),
    ("set", "red, green, blue", "Blue,red ,GREEN", True), ("set", "a,b", "a,b,c", False)])
async def test_reference_checks(mode, reference, answer, ok):
    task = Task(id="r", prompt="q", reference=reference, reference_check={"mode": mode})
    result = await evaluate(task, Trajectory(id="x", answer=answer))
    assert result.status is Status.ok
    assert result.candidate("x").passed is ok
    assert result.provenance.execution.code_run is False
    assert result.provenance.integrity == "reference" and result.provenance.mode == "reference"


async def test_invalid_regex_reference_names_the_field():
    task = Task(id="r", prompt="q", reference="(unclosed", reference_check={"mode": "regex"})
    result = await evaluate(task, Trajectory(id="x", answer="a"))
    assert result.status is Status.failed and "task.reference" in result.error.message


def test_code_extraction_order():
    task = Task(id="t", prompt="", entry_point="solve")
    fenced = Trajectory(id="f", answer="```python\ndef helper(): pass\n```\ntext\n```python\ndef solve():\n"
                                       "    return 1\n```\n```python\nprint('usage')\n```")
    assert "def solve" in extract_code(fenced, task).code
    last = Trajectory(id="l", answer="```python\nx = 1\n```\n```python\ny = 2\n```\n```python\nunfinished")
    assert extract_code(last, task).code.strip() == "y = 2"
    assert extract_code(Trajectory(id="p", answer="yes"), task).code is None
    assert extract_code(Trajectory(id="c", answer="no", code="z = 3"), task).source == "code_field"


@pytest.mark.slow
async def test_n_plus_one_example_passes_the_fixes_and_fails_the_cache():
    item = load_tasks(ROOT / "examples" / "n_plus_one" / "task.json")[0]
    result = await evaluate(item.task, *item.trajectories, timeout_s=30)
    assert result.status is Status.ok
    assert result.best == ["join", "batched_prefetch"]
    assert result.details["ties"] == [["join", "batched_prefetch"]]
    cache = result.candidate("lru_cache")
    assert cache.passed is False
    messages = {t["name"]: t["message"] for t in cache.details["tests"]}
    assert "got 51 for 50 orders = 1 + N" in messages["constant_queries_50_orders"]
    assert "got 5001 for 5000 orders = 1 + N" in messages["constant_queries_5000_orders"]
    assert result.candidate("batched_prefetch").details["code_source"] == "fenced_block"
    assert json.loads(result.model_dump_json())["provenance"]["execution"]["isolation_level"]
    assert result.provenance.integrity == "isolated"
    assert {t["integrity"] for c in result.candidates for t in c.details["tests"]} == {"isolated"}
    assert "stale items after an insert" in messages["sees_new_items_between_calls"]


@pytest.mark.slow
async def test_a_test_may_ask_for_more_time_up_to_max_timeout_s():
    slow = Trajectory(id="slow", code="import time\ndef f():\n    time.sleep(3)\n    return 1\n")
    task = Task(id="t", prompt="", entry_point="f",
                tests=[{"kind": "call", "call": "f()", "expected": 1, "timeout_s": 8}])
    result = await evaluate(task, slow, timeout_s=1, max_timeout_s=10)
    assert outcomes(result, "slow") == ["pass"]  # its own 8 s, not the 1 s default
    too_long = Task(id="t", prompt="", entry_point="f",
                    tests=[{"kind": "call", "call": "f()", "expected": 1, "timeout_s": 30}])
    refused = await evaluate(too_long, slow, max_timeout_s=10)
    assert refused.status is Status.failed and refused.error.type == "TaskValidationError"
    assert "task.tests[0].timeout_s" in refused.error.message and refused.calls == 0


@pytest.mark.slow
async def test_when_no_candidate_passes_there_is_no_best_and_the_escalation_says_why():
    from oracle.config.model import EscalationConfig
    from oracle.escalation._triggers import check_result
    from oracle.routing._chain import PolicyChain

    task = Task(id="none", prompt=ADD_PROMPT, entry_point="add", tests=[
        {"kind": "call", "name": "small", "call": "add(1, 2)", "expected": 3},
        {"kind": "call", "name": "big", "call": "add(10, 20)", "expected": 30}])
    wrong = [Trajectory(id="minus", code="def add(a, b):\n    return a - b\n"),
             Trajectory(id="times", code="def add(a, b):\n    return a * b\n")]
    result = await evaluate(task, *wrong)
    assert result.status is Status.ok
    assert result.best == [] and result.details["none_passed"] is True
    assert result.ranking == ["minus", "times"]
    assert "no candidate passed" in result.explanation
    route = PolicyChain(OracleConfig()).route(task, tuple(wrong))
    esc = check_result(task, route, result, EscalationConfig())
    assert esc is not None and "No candidate" in esc.question and "inseparable" not in esc.question
    assert "small: fail: add(1, 2): expected 3, got -1" in esc.question
    assert esc.evidence["first_failures"]["times"].startswith("small: fail")
    assert esc.options == ["minus", "times", "none"]
