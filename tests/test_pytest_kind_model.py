"""The pytest kind's task model and the host's reading of a suite's report (no sandbox).

Load-time refusals name the field: file names that are absolute, hold ``..``, are hidden, are
pytest configuration or shadow the test side's pytest; ``code`` and ``files`` together or neither;
a ``select`` naming no file; a module that defines no test pytest would collect; a ``task.module``
that is a keyword, a standard-library module, pytest's own, or a task file's name. The host counts
every collected test: one the test process never reported is ``timeout`` or ``error``, never passed.
"""

from __future__ import annotations

import pytest

from oracle.errors import TaskValidationError
from oracle.sandbox.runs import RunResult
from oracle.strategies.verifier import harness, pytest_suite
from oracle.tasks.task import Task
from oracle.tasks.testspec import PytestTest


def _task(test: dict, **task) -> Task:
    return Task(id="t", prompt="", tests=[{"kind": "pytest", **test}], **task)


GOOD = "def test_a():\n    assert slugify('A') == 'a'\n"


@pytest.mark.parametrize("files, field", [
    ({"/abs/test_a.py": GOOD}, "not a relative path"),
    ({"sub/../test_a.py": GOOD}, "'..' part"),
    ({"./test_a.py": GOOD}, "'.' or '..' part"),
    ({".hidden/test_a.py": GOOD}, "not a plain name"),
    ({"sub\\test_a.py": GOOD}, "not a relative path"),
    ({"test_a.py": GOOD, "pytest.ini": "[pytest]\n"}, "configuration file"),
    ({"test_a.py": GOOD, "pyproject.toml": ""}, "configuration file"),
    ({"test_a.py": GOOD, "_pytest/__init__.py": ""}, "shadow the test side's own '_pytest'"),
    ({"test_a.py": GOOD, "pytest.py": ""}, "shadow the test side's own 'pytest'"),
    ({"test_a.py": GOOD, "d": "x", "d/test_b.py": GOOD}, "both a file and a directory"),
    ({}, "at least one file"),
])
def test_bad_file_names_are_refused_naming_the_field(files, field):
    with pytest.raises(TaskValidationError) as err:
        _task({"files": files})
    assert str(err.value).startswith("task.tests[0].files: ") and field in str(err.value), str(err.value)


@pytest.mark.parametrize(
    "test, message",
    [
        ({"code": "x = 1\n"}, "task.tests[0].code: defines no test"),
        ({"code": "def helper():\n    def test_inner():\n        pass\n"}, "defines no test"),
        ({"code": "class Helper:\n    def test_a(self):\n        pass\n"}, "defines no test"),
        ({"code": "class TestA:\n    def helper(self):\n        pass\n"}, "defines no test"),
        ({"files": {"helpers.py": GOOD}}, "task.tests[0].files: no test file"),
        ({"files": {"test_a.py": "x = 1\n", "test_b.py": "y = 2\n"}}, "none of ['test_a.py', 'test_b.py']"),
        ({"code": GOOD, "files": {"test_a.py": GOOD}}, "task.tests[0].code: give exactly one of code"),
        ({}, "give exactly one of code"),
        (
            {"code": GOOD, "select": ["test_other.py::test_a"]},
            "task.tests[0].select: 'test_other.py::test_a' names no file",
        ),
        ({"code": GOOD, "select": []}, "task.tests[0].select: an empty list"),
        ({"code": GOOD, "select": "  "}, "task.tests[0].select: an empty -k expression"),
    ],
)
def test_a_suite_that_cannot_collect_or_select_a_test_is_refused(test, message):
    with pytest.raises(TaskValidationError) as err:
        _task(test)
    assert message in str(err.value), str(err.value)


@pytest.mark.parametrize("code", [
    GOOD,
    "async def test_a():\n    pass\n",
    "class TestA:\n    def test_a(self):\n        pass\n",
    "class TestOuter:\n    class TestInner:\n        def test_a(self):\n            pass\n",
    "import unittest\nclass Checks(unittest.TestCase):\n    def test_a(self):\n        pass\n",
    "from base import Base\nclass TestA(Base):\n    pass\n",
    "import sys\nif sys.version_info >= (3, 8):\n    def test_a():\n        pass\n",
    "test_alias = print\n",
    "def test_broken(:\n",  # does not parse here: the run reports it
])
def test_what_pytest_would_collect_is_accepted(code):
    assert _task({"code": code}).tests[0].kind == "pytest"


def test_a_star_import_from_a_task_module_may_bring_tests():
    test = PytestTest(kind="pytest", files={"test_a.py": "from checks import *\n", "checks.py": GOOD})
    assert test.test_files() == {"test_a.py": "from checks import *\n", "checks.py": GOOD}
    with pytest.raises(ValueError, match="defines no test"):
        PytestTest(kind="pytest", files={"test_a.py": "from solution import *\n"})


def test_code_is_the_file_test_task_py_and_node_ids_select_it():
    test = _task({"code": GOOD, "select": ["test_task.py::test_a"]}).tests[0]
    assert test.test_files() == {"test_task.py": GOOD}


@pytest.mark.parametrize("module", ["json", "class", "pytest", "_pytest", "pluggy", "__main__", "1abc", "a.b"])
def test_task_module_must_be_a_name_the_test_side_can_give_the_candidate(module):
    with pytest.raises(TaskValidationError) as err:
        Task(id="t", prompt="", module=module)
    assert str(err.value).startswith("task.module: ")


def test_a_task_file_may_not_shadow_the_candidate_s_module():
    with pytest.raises(TaskValidationError) as err:
        _task({"files": {"test_a.py": GOOD, "mine/__init__.py": ""}}, module="mine")
    assert str(err.value).startswith("task.tests[0].files: the file 'mine/__init__.py' would shadow")
    assert _task({"files": {"test_a.py": GOOD, "solution_helpers.py": ""}}).module == "solution"


def test_the_default_module_leaves_every_existing_task_s_content_hash_alone():
    plain = Task(id="t", prompt="p")
    assert plain.content_hash() == Task(id="t", prompt="p", module="solution").content_hash()
    assert plain.content_hash() != Task(id="t", prompt="p", module="mine").content_hash()


# -- the host reads the frames ---------------------------------------------------------------------
SUITE = PytestTest(kind="pytest", code="def test_a():\n    pass\ndef test_b():\n    pass\ndef test_c():\n    pass\n")
IDS = ["test_task.py::test_a", "test_task.py::test_b", "test_task.py::test_c"]


def _case(node_id: str, outcome: str = "pass") -> dict:
    return {"op": "case", "node_id": node_id, "outcome": outcome, "message": outcome, "duration_ms": 1.0}


def _read(run: RunResult):
    return harness.interpret(SUITE, 0, run, tolerance=1e-9, memory_mb=64)


@pytest.mark.parametrize("timed_out, expected", [(True, "timeout"), (False, "error")])
def test_tests_the_process_never_reported_are_not_passed(timed_out, expected):
    run = RunResult(events=[{"op": "collected", "node_ids": IDS, "dropped": []}, _case(IDS[0])],
                    timed_out=timed_out)
    suite = _read(run)
    assert [(c.node_id, c.outcome) for c in suite.cases] == [(IDS[0], "pass"), (IDS[1], expected), (IDS[2], expected)]
    assert [c.weight for c in suite.cases] == pytest.approx([1 / 3] * 3)
    assert harness.flatten(suite) == list(suite.cases)


def test_a_verdict_whose_counts_do_not_add_up_passes_nothing():
    verdict = {"op": "verdict", "outcome": "suite", "collected": IDS, "reported": 2, "exit_status": 0}
    run = RunResult(events=[{"op": "collected", "node_ids": IDS}, _case(IDS[0]), _case(IDS[1]), _case(IDS[2])],
                    verdict=verdict)
    assert {c.outcome for c in _read(run).cases} == {"error"}


def test_an_unknown_outcome_word_is_an_error_and_a_repeated_case_counts_once():
    run = RunResult(events=[{"op": "collected", "node_ids": IDS[:1]}, _case(IDS[0], "totally-passed"),
                            _case(IDS[0], "pass")],
                    verdict={"op": "verdict", "outcome": "suite", "collected": IDS[:1], "reported": 1})
    assert [(c.outcome) for c in _read(run).cases] == ["error"]


def test_a_run_that_never_collected_is_one_outcome_with_the_whole_weight():
    suite = _read(RunResult(timed_out=True))
    assert (suite.outcome, suite.cases, suite.weight) == ("timeout", (), 1.0)
    assert harness.flatten(suite) == [suite]
    load = _read(RunResult(verdict={"op": "verdict", "outcome": "error", "message": "SyntaxError: bad (line 1)"}))
    assert (load.outcome, load.message) == ("error", "SyntaxError: bad (line 1)")


def test_collection_errors_come_first_as_their_own_cases():
    run = RunResult(events=[_case("test_task.py", "broken"), {"op": "collected", "node_ids": IDS[:1]},
                            _case(IDS[0])],
                    verdict={"op": "verdict", "outcome": "suite", "collected": IDS[:1], "reported": 2})
    suite = _read(run)
    assert [(c.name, c.outcome) for c in suite.cases] == [("pytest[0]::test_task.py", "broken"),
                                                          ("pytest[0]::test_a", "pass")]
    assert pytest_suite.short_id(SUITE, IDS[0]) == "test_a"


def test_a_file_that_did_not_collect_stands_for_the_tests_other_runs_collected_from_it():
    ok = _read(RunResult(events=[{"op": "collected", "node_ids": IDS}, *map(_case, IDS)],
                         verdict={"op": "verdict", "outcome": "suite", "collected": IDS, "reported": 3}))
    bad = _read(RunResult(events=[_case("test_task.py", "error"), {"op": "collected", "node_ids": []}],
                          verdict={"op": "verdict", "outcome": "suite", "collected": [], "reported": 1}))
    aligned = pytest_suite.align({"ok": ok, "bad": bad})
    assert aligned["ok"] is ok
    assert [(c.node_id, c.outcome) for c in aligned["bad"].cases] == [(i, "error") for i in IDS]
    assert sum(c.weight for c in aligned["bad"].cases) == pytest.approx(1.0)
    alone = pytest_suite.align({"bad": bad})  # nobody collected the file: it stays one case
    assert [c.node_id for c in alone["bad"].cases] == ["test_task.py"]
