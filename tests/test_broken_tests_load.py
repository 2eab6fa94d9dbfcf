"""Tests broken on sight are refused at load, naming the test; tests that only look odd still load.

The two false results of issue 27 are checked as a user meets them, through ``oracle evaluate``:
a pytest-style ``assert`` test used to print ``wrong 1.000 PASS`` and a ``check`` test without
``check()`` charged ``0.000 FAIL`` to a correct candidate. Both now exit 2 before anything runs.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from oracle.errors import TaskValidationError
from oracle.tasks.task import Task

ROOT = Path(__file__).resolve().parent.parent


def _task(*tests: dict, language: str | None = "python", entry_point: str = "slugify") -> Task:
    return Task(id="t", prompt="Write slugify(s).", entry_point=entry_point, language=language, tests=list(tests))


def _refused(test: dict, language: str | None = "python") -> str:
    with pytest.raises(TaskValidationError) as info:
        _task({"kind": "assert", "code": "assert slugify('a') == 'a'"}, test, language=language)
    assert info.value.field == "task.tests[1]", str(info.value)
    return str(info.value)


def _loads(test: dict, language: str | None = "python") -> None:
    assert _task(test, language=language).tests[0].kind == test["kind"]


PYTEST_STYLE = [
    'def test_basic():\n    assert slugify("Hello World") == "hello-world"\n',
    'import pytest\n\nCASES = [("A b", "a-b")]\n\n@pytest.mark.parametrize("s, want", CASES)\n'
    "def test_cases(s, want):\n    assert slugify(s) == want\n",
    "from pytest import mark\n@mark.slow\ndef test_x():\n    assert slugify('a') == 'a'\n",
    "import unittest\nclass TestSlug(unittest.TestCase):\n    def test_a(self):\n"
    "        self.assertEqual(slugify('a'), 'a')\n",
    "from solution import slugify\n\ndef test_a():\n    assert slugify('a') == 'a'\n",
    "async def test_a():\n    assert slugify('a') == 'a'\n",
]


@pytest.mark.parametrize("code", PYTEST_STYLE)
def test_an_assert_test_that_only_defines_test_functions_is_refused_suggesting_pytest(code):
    message = _refused({"kind": "assert", "code": code})
    assert "kind: pytest" in message and "would pass any candidate" in message
    assert "test_" in message


def test_the_refusal_names_the_test_by_index_and_name():
    message = _refused({"kind": "assert", "code": PYTEST_STYLE[0], "name": "basic"})
    assert message.startswith("task.tests[1]: ('basic')"), message


STILL_LOAD = {
    "calls a helper it defines": "def helper():\n    assert slugify('a') == 'a'\n\nhelper()\n",
    "calls its own test function": "def test_a():\n    assert slugify('a') == 'a'\n\ntest_a()\n",
    "runs them under __main__": "def test_a():\n    assert slugify('a') == 'a'\n\n"
                                "if __name__ == '__main__':\n    test_a()\n",
    "assert inside if": "def test_a():\n    pass\nif True:\n    assert slugify('a') == 'a'\n",
    "assert inside for": "def test_a():\n    pass\nfor s in ['a']:\n    assert slugify(s) == s\n",
    "assert inside with": "import contextlib\ndef test_a():\n    pass\nwith contextlib.suppress(KeyError):\n"
                          "    assert slugify('a') == 'a'\n",
    "assert inside try": "def test_a():\n    pass\ntry:\n    x = 1\nexcept ValueError:\n    assert False\n",
    "raise at module level": "def test_a():\n    pass\nif slugify != 1:\n    raise SystemExit(0)\n",
    "a decorator of its own": "def run(fn):\n    fn()\n    return fn\n\n@run\ndef test_a():\n"
                              "    assert slugify('a') == 'a'\n",
    "a call in a class body": "class TestA:\n    def test_a(self):\n        pass\n    value = slugify('a')\n",
    "a default value that calls": "def test_a(x=slugify('a')):\n    pass\n",
    "no test functions at all": "import math\nx = [1, 2]\n",
    "a syntax error (reported at run time)": "def test_a(:\n    pass\n",
}


@pytest.mark.parametrize("code", list(STILL_LOAD.values()), ids=list(STILL_LOAD))
def test_an_assert_test_that_can_run_or_fail_still_loads(code):
    _loads({"kind": "assert", "code": code})


def test_javascript_assert_tests_are_not_read_as_python():
    _loads({"kind": "assert", "code": "function test_a() { assert.strictEqual(slugify('a'), 'a'); }"},
           language="javascript")
    _loads({"kind": "assert", "code": "def test_a():\n    assert slugify('a') == 'a'\n"}, language="javascript")


@pytest.mark.parametrize("code, why", [
    ("def test(candidate):\n    assert candidate(1, 2) == 3\n", "defines no check function"),
    ("def outer():\n    def check(candidate):\n        pass\n", "defines no check function"),
    ("x = 1\n", "defines no check function"),
    ("def check():\n    assert add(1, 2) == 3\n", "takes no argument"),
    ("def check(*, candidate):\n    pass\n", "takes no argument"),
])
def test_a_check_test_that_cannot_call_check_is_refused(code, why):
    message = _refused({"kind": "check", "code": code})
    assert why in message


@pytest.mark.parametrize("code", [
    "def check(candidate):\n    assert candidate(1, 2) == 3\n",
    "def check(c, extra=None):\n    pass\n",
    "def check(*args):\n    pass\n",
    "def make():\n    return lambda c: None\ncheck = make()\n",
    "from os.path import join as check\n",
    "from helpers import *\n",
    "globals()['check'] = lambda c: None\n",
    "exec('def check(c): pass')\n",
    "def setup():\n    global check\n    check = lambda c: None\nsetup()\n",
    "try:\n    def check(c):\n        pass\nexcept Exception:\n    pass\n",
    "if True:\n    def check(c):\n        pass\n",
    "class check:\n    def __init__(self, c):\n        pass\n",
    "def check(:\n",  # a syntax error: reported at run time as a broken test
])
def test_a_check_test_that_may_define_check_loads(code):
    _loads({"kind": "check", "code": code})


def test_a_javascript_check_test_is_not_read_as_python():
    _loads({"kind": "check", "code": "function check(candidate) { assert.ok(candidate(1)); }"},
           language="javascript")


def test_a_call_that_does_not_parse_is_refused():
    message = _refused({"kind": "call", "call": "slugify('a',", "expected": "a"})
    assert "does not parse as a Python expression" in message
    assert "does not parse" in _refused({"kind": "call", "call": " slugify('a')", "expected": "a"})
    assert "does not parse" in _refused({"kind": "call", "call": "slugify('a',", "expected": "a"}, language=None)


def test_a_call_in_javascript_is_not_read_as_python():
    _loads({"kind": "call", "call": "slugify([1, 2].map(x => x * 2))", "expected": "2-4"}, language="javascript")
    _loads({"kind": "call", "call": "slugify(new Date(0).toISOString())", "expected": "x"}, language=None)
    _loads({"kind": "call", "call": "slugify(1, 2)", "expected": "x"}, language=None)


# -- the two false results, as the user met them ------------------------------------------

def _oracle(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "oracle", *args], capture_output=True, text=True, cwd=ROOT,
                          timeout=300)


def _write(tmp_path: Path, task: dict, trajectories: list[dict]) -> Path:
    path = tmp_path / "task.json"
    path.write_text(json.dumps({"task": task, "trajectories": trajectories}))
    return path


def test_a_pytest_style_assert_test_no_longer_passes_a_wrong_candidate(tmp_path):
    path = _write(tmp_path, {"id": "slug", "prompt": "Write slugify(s).", "entry_point": "slugify", "tests": [
        {"kind": "assert", "code": 'def test_basic():\n    assert slugify("Hello World") == "hello-world"\n'}]},
        [{"id": "wrong", "code": "def slugify(s):\n    return 'WRONG'\n"}])
    out = _oracle("evaluate", "-q", str(path))
    assert out.returncode == 2, out.stdout + out.stderr
    assert "PASS" not in out.stdout
    assert "task.tests[0]" in out.stderr and "kind: pytest" in out.stderr


def test_a_check_test_without_check_is_not_charged_to_the_candidate(tmp_path):
    path = _write(tmp_path, {"id": "add", "prompt": "Write add(a, b).", "entry_point": "add", "tests": [
        {"kind": "check", "code": "def test(candidate):\n    assert candidate(1, 2) == 3\n"}]},
        [{"id": "good", "code": "def add(a, b):\n    return a + b\n"}])
    out = _oracle("evaluate", "-q", str(path))
    assert out.returncode == 2, out.stdout + out.stderr
    assert "FAIL" not in out.stdout
    assert "task.tests[0]" in out.stderr and "defines no check function" in out.stderr


def test_a_task_without_a_solution_keeps_its_content_hash():
    from oracle._internal.canonical import sha256_json

    task = _task({"kind": "call", "call": "slugify('a')", "expected": "a"})
    before = {k: v for k, v in task.model_dump(mode="json").items()
              if k not in ("solution", "environment", "module", "repository", "test_patch")}  # hashed before them
    assert task.content_hash() == sha256_json(before)
    with_solution = Task(**{**task.model_dump(), "solution": "def slugify(s):\n    return s\n"})
    assert with_solution.content_hash() != task.content_hash()


def test_a_refused_test_is_named_with_its_own_line_in_the_file(tmp_path):
    """The error points at the test's entry in the file (line 7 here), not the task's first line."""
    from oracle.tasks.files import load_tasks

    path = tmp_path / "task.yaml"
    path.write_text("task:\n  id: multi\n  prompt: p\n  entry_point: f\n  tests:\n"
                    "    - {kind: call, call: \"f(1)\", expected: 1}\n"
                    "    - kind: check\n      code: |\n        def chek(candidate):\n            pass\n"
                    "trajectories:\n  - id: a\n    code: \"def f(x):\\n    return x\\n\"\n")
    with pytest.raises(TaskValidationError) as err:
        load_tasks(path)
    assert err.value.line == 7 and err.value.field == "task.tests[1]", (err.value.line, str(err.value))
    assert ":line 7: task.tests[1]: this check test defines no check function" in str(err.value)
