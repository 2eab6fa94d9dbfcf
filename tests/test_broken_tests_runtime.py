"""Broken tests found at run time, in the real sandbox: reported once, scored for nobody, never a
candidate's 0; and no candidate behaviour gets a test classified broken so that it stops counting.

Each hostile candidate below is evaluated alone (where "broken in every run" would be its own run)
on tests that are sound; none may make any of them broken. An honest candidate passes the same task.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from oracle.config.model import OracleConfig
from oracle.results.result import Status
from oracle.strategies.protocol import EvaluationContext
from oracle.strategies.verifier.strategy import VerifierStrategy
from oracle.tasks.task import Task, Trajectory

pytestmark = pytest.mark.sandbox
ROOT = Path(__file__).resolve().parent.parent
GOOD = Trajectory(id="good", code="def slugify(s):\n    return '-'.join(s.lower().split())\n")
WRONG = Trajectory(id="wrong", code="def slugify(s):\n    return 'WRONG'\n")
SOUND = [
    {"kind": "assert", "name": "basic", "code": "assert slugify('Hello World') == 'hello-world'\n"},
    {"kind": "assert", "name": "data", "code": "import json\nCASES = json.loads('[[\"A b\", \"a-b\"]]')\n"
                                              "for s, want in CASES:\n    assert slugify(s) == want\n"},
    {"kind": "assert", "name": "helper", "code": "def run(s):\n    return slugify(s)\n\nassert run('A') == 'a'\n"},
    {"kind": "call", "name": "call", "call": "slugify('X y')", "expected": "x-y"},
    {"kind": "check", "name": "check", "code": "def check(candidate):\n    assert candidate('Q r') == 'q-r'\n"},
    {"kind": "check", "name": "check_data",
     "code": "import json\nWANT = json.loads('\"a-b\"')\n\ndef check(candidate):\n    got = candidate('A B')\n"
             "    assert got == WANT\n"},
]


async def evaluate(task: Task, *trajectories: Trajectory, strategy: VerifierStrategy | None = None, **verifier):
    config = OracleConfig(verifier={"timeout_s": 10, **verifier})
    strategy = strategy or VerifierStrategy()
    return await strategy.evaluate(EvaluationContext(task=task, trajectories=trajectories, config=config))


def _task(tests, **extra) -> Task:
    return Task(id="slug", prompt="Write slugify(s).", entry_point="slugify", tests=tests, **extra)


def outcomes(result, cid: str) -> dict[str, tuple[str, str]]:
    return {t["name"]: (t["outcome"], t["message"]) for t in result.candidate(cid).details["tests"]}


BROKEN = {
    "return outside a function": ("assert", "return 1\n", "does not compile"),
    "break outside a loop": ("assert", "break\n", "does not compile"),
    "nonlocal at module level": ("assert", "nonlocal x\n", "does not compile"),
    "a null byte": ("assert", "assert slugify('a') == 'a'\x00\n", "does not compile"),
    "a missing module": (
        "assert",
        "import not_installed_module_xyz\nassert slugify('a') == 'a'\n",
        "imports a module the test side lacks",
    ),
    "a fixture that fails": (
        "assert",
        "import json\nCASES = json.loads('{bad')\nassert slugify(CASES) == 1\n",
        "raised before any candidate code ran: JSONDecodeError",
    ),
    "a check whose setup fails": (
        "check",
        "def check(candidate):\n    data = int('x')\n    assert candidate(data)\n",
        "raised before any candidate code ran: ValueError",
    ),
    "a check with the wrong signature": (
        "check",
        "def check(a, b):\n    pass\n",
        "raised before any candidate code ran",
    ),
    "a call whose argument fails": ("call", "int('x')", "raised before any candidate code ran: ValueError"),
    "a check that is never defined": (
        "check",
        "if False:\n    def check(candidate):\n        pass\n",
        "defines no check function",
    ),
}


async def test_broken_tests_are_reported_once_each_and_scored_for_nobody():
    tests = [dict(SOUND[0])]
    for name, (kind, code, _) in BROKEN.items():
        tests.append(
            {"kind": kind, "name": name, **({"call": code, "expected": 1} if kind == "call" else {"code": code})}
        )
    result = await evaluate(_task(tests), GOOD, WRONG)
    assert result.status is Status.ok, result.error
    reasons = {b.test: b.reason for b in result.broken_tests}
    assert sorted(reasons) == sorted(BROKEN)
    for name, (_, _, why) in BROKEN.items():
        assert why in reasons[name], (name, reasons[name])
        for cid in ("good", "wrong"):  # each candidate's own output says broken, with the reason
            assert outcomes(result, cid)[name] == ("broken", reasons[name])
    good, wrong = result.candidate("good"), result.candidate("wrong")
    assert (good.score, good.passed, wrong.score, wrong.passed) == (1.0, True, 0.0, False)
    assert good.details["total_tests"] == 1 and good.details["not_scored_tests"] == len(BROKEN)
    assert result.best == ["good"] and "broken_tests" in [c.kind for c in result.concerns]


async def test_the_prompts_own_code_failing_test_side_breaks_every_test():
    task = Task(
        id="p",
        prompt="import not_installed_module_xyz\n\ndef slugify(s):\n    ...\n",
        entry_point="slugify",
        tests=SOUND[:2],
    )
    result = await evaluate(task, GOOD)
    assert result.status is Status.failed and result.error.type == "BrokenTests"
    assert "every test of this task is broken" in result.error.message
    assert "the task prompt's own code failed on the test side" in result.error.message
    assert [c.kind for c in result.concerns] == ["broken_tests"] and len(result.broken_tests) == 2
    # the first-contact fix is named: the module is missing, and where a task names its packages
    assert "not_installed_module_xyz is not installed for the sandbox's interpreter" in result.error.message
    assert "task.environment.requirements" in result.details["environment_hint"]


async def test_a_missing_name_is_the_candidates_error_not_a_broken_test():
    result = await evaluate(_task(SOUND[:1]), Trajectory(id="none", code="def other(s):\n    return s\n"))
    assert result.broken_tests == []
    assert outcomes(result, "none")["basic"][0] == "error" and result.candidate("none").score == 0.0


async def test_a_test_that_breaks_after_the_candidate_ran_is_not_broken():
    tests = [
        {"kind": "assert", "name": "late", "code": "assert slugify('a') == 'a'\nimport not_installed_module_xyz\n"}
    ]
    result = await evaluate(_task(tests), GOOD)
    assert result.broken_tests == [] and outcomes(result, "good")["late"][0] == "error"


HOSTILE = {
    "entry point as an int": "slugify = 5\n",
    "entry point as None": "slugify = None\n",
    "entry point as text": "slugify = 'hello-world'\n",
    "entry point as a list": "slugify = ['a', 'b']\n",
    "names the tests use": "slugify = 5\nCASES = 7\njson = 1\nrun = 3\nWANT = None\ncheck = 4\n",
    "a class for a function": "class slugify:\n    pass\n",
    "an object for a function": "class _S:\n    pass\nslugify = _S()\n",
    "nothing at all": "x = 1\n",
    "raising at import": "raise ModuleNotFoundError('numpy')\n",
    "exiting at import": "import sys\nsys.exit(0)\n",
    "raising the test side's errors": "def slugify(s):\n    raise ModuleNotFoundError(\"No module named 'json'\")\n",
    "a syntax error": "def slugify(s) return s\n",
    "a huge export": "slugify = 'x' * (20 * 1024 * 1024)\n",
    "printing a broken verdict": "import sys\nprint('{\"op\": \"verdict\", \"outcome\": \"broken\"}')\n"
                                 "print('{\"op\": \"verdict\", \"outcome\": \"broken\"}', file=sys.stderr)\n"
                                 "def slugify(s):\n    return 'x'\n",
}


@pytest.mark.parametrize("code", list(HOSTILE.values()), ids=list(HOSTILE))
async def test_no_candidate_gets_a_sound_test_classified_broken(code):
    result = await evaluate(_task(SOUND), Trajectory(id="hostile", code=code))
    assert result.status is Status.ok, result.error
    assert result.broken_tests == [], result.broken_tests
    hostile = result.candidate("hostile")
    assert hostile.passed is False and hostile.score == 0.0, hostile.details
    assert all(t["outcome"] in ("fail", "error") for t in hostile.details["tests"]), hostile.details["tests"]


async def test_the_honest_candidate_passes_the_same_task():
    result = await evaluate(_task(SOUND), GOOD, WRONG)
    assert result.broken_tests == [] and result.candidate("good").passed is True
    assert result.candidate("wrong").score == 0.0


async def test_in_process_a_test_that_does_not_compile_is_broken_before_the_candidate_loads():
    tests = [dict(SOUND[0]), {"kind": "assert", "name": "bad", "code": "return 1\n"}]
    result = await evaluate(_task(tests, execution="in_process"), GOOD, allow_in_process=True)
    assert [b.test for b in result.broken_tests] == ["bad"] and result.candidate("good").passed is True
    assert "does not compile" in result.broken_tests[0].reason


# -- the reference solution ----------------------------------------------------------------------

REFERENCE = "def slugify(s):\n    return '-'.join(s.lower().split())\n"


async def test_a_test_that_fails_on_the_reference_is_broken_and_credits_no_one():
    tests = [
        dict(SOUND[0]),
        {"kind": "assert", "name": "wrong_expectation", "code": "assert slugify('A') == 'WRONG'\n"},
    ]
    result = await evaluate(_task(tests, solution=REFERENCE), GOOD, WRONG)
    assert [(b.test, b.reason.split(":")[0]) for b in result.broken_tests] == [
        ("wrong_expectation", "fails on the reference solution")]
    assert result.candidate("good").passed is True and result.candidate("good").score == 1.0
    assert outcomes(result, "wrong")["wrong_expectation"][0] == "broken"  # its 'pass' there counts for nothing
    assert result.candidate("wrong").score == 0.0
    assert result.details["reference_solution"]["outcomes"] == {"basic": "pass", "wrong_expectation": "fail"}


async def test_the_reference_runs_once_per_task_content():
    strategy = VerifierStrategy()
    task = _task(SOUND[:2], solution=REFERENCE)
    first = await evaluate(task, GOOD, strategy=strategy)
    again = await evaluate(task, WRONG, strategy=strategy)
    assert first.details["reference_solution"]["cached"] is False and first.calls == 4
    assert again.details["reference_solution"] == {**first.details["reference_solution"], "cached": True, "runs": 0}
    assert again.calls == 2
    changed = await evaluate(_task(SOUND[:2], solution=REFERENCE + "\n# edited\n"), GOOD, strategy=strategy)
    assert changed.details["reference_solution"]["cached"] is False


async def test_a_humaneval_style_body_is_a_reference_too():
    task = Task(id="h", prompt='def slugify(s):\n    """Slug of s."""\n', entry_point="slugify", tests=SOUND[:1],
                solution="    return '-'.join(s.lower().split())\n")
    result = await evaluate(task, GOOD)
    assert result.broken_tests == [] and result.details["reference_solution"]["outcomes"] == {"basic": "pass"}


@pytest.mark.parametrize("solution, why", [
    ("def slugify(s) return s\n", "does not compile"),
    ("raise RuntimeError('no')\ndef slugify(s):\n    return s\n", "does not load"),
])
async def test_a_reference_that_cannot_load_is_the_tasks_error_never_a_candidates_zero(solution, why):
    result = await evaluate(_task(SOUND[:2], solution=solution), GOOD, WRONG)
    assert result.status is Status.failed and result.error.type == "TaskValidationError"
    assert result.error.message.startswith("task.solution: ") and why in result.error.message
    assert result.candidates == [] and [c.kind for c in result.concerns] == ["task_unrunnable"]


@pytest.mark.skipif(shutil.which("node") is None, reason="no node")
async def test_a_javascript_test_that_does_not_compile_is_broken():
    task = Task(id="js", prompt="Write add(a, b).", language="javascript", entry_point="add", tests=[
        {"kind": "assert", "name": "ok", "code": "assert.strictEqual(add(1, 2), 3);"},
        {"kind": "assert", "name": "bad", "code": "assert.strictEqual(add(1, 2), 3;"},
        {"kind": "call", "name": "badcall", "call": "add(1,", "expected": 3}])
    result = await evaluate(task, Trajectory(id="js", code="function add(a, b) { return a + b; }"))
    assert {b.test for b in result.broken_tests} == {"bad", "badcall"}
    assert all("does not compile: SyntaxError" in b.reason for b in result.broken_tests)
    assert result.candidate("js").passed is True


# -- as the user sees it -------------------------------------------------------------------------

@pytest.mark.slow
def test_oracle_evaluate_shows_the_broken_tests_and_scores_the_rest(tmp_path):
    tests = [SOUND[0], {"kind": "assert", "name": "needs_numpy", "code": "import numpy\nassert slugify('a') == 'a'\n"}]
    path = tmp_path / "task.json"
    path.write_text(json.dumps({"task": _task(tests).model_dump(mode="json", exclude_defaults=True),
                                "trajectories": [GOOD.model_dump(), WRONG.model_dump()]}))
    out = subprocess.run([sys.executable, "-m", "oracle", "evaluate", "-q", str(path)], capture_output=True,
                         text=True, cwd=ROOT, timeout=300)
    assert out.returncode == 0, out.stderr
    assert "broken test" in out.stdout and "needs_numpy" in out.stdout and "No module named 'numpy'" in out.stdout
    assert [line.split()[:3] for line in out.stdout.splitlines() if line.startswith(("good ", "wrong "))] == [
        ["good", "1.000", "PASS"], ["wrong", "0.000", "FAIL"]]
    row = json.loads(subprocess.run([sys.executable, "-m", "oracle", "evaluate", "--json", str(path)],
                                    capture_output=True, text=True, cwd=ROOT, timeout=300).stdout)
    assert [b["test"] for b in row["result"]["result"]["broken_tests"]] == ["needs_numpy"]
    assert row["escalation"]["reason"] == "broken_tests"


async def test_the_count_scored_on_leaves_out_a_test_the_reference_skips():
    """A test skipped on the reference is neutral, not run: the broken-tests concern counts only
    what the candidates were scored on."""
    suite = ("import pytest\nfrom solution import slugify\n\n"
             "def test_basic():\n    assert slugify('Hello World') == 'hello-world'\n\n"
             "def test_wrong_expectation():\n    assert slugify('A B') == 'a_b'\n\n"
             "@pytest.mark.skip(reason='later')\ndef test_later():\n    assert slugify('x') == 'x'\n")
    task = _task([{"kind": "pytest", "name": "suite", "code": suite}], solution=GOOD.code)
    result = await evaluate(task, GOOD, WRONG)
    assert result.status is Status.ok
    assert [b.test for b in result.broken_tests] == ["suite::test_wrong_expectation"]
    assert result.details["scored_tests"] == 1
    assert result.candidate("good").details["total_tests"] == 1 and result.candidate("good").passed
    assert not result.candidate("wrong").passed
    concern = next(c for c in result.concerns if c.kind == "broken_tests")
    assert concern.evidence.scored == 1
