"""The pytest test kind, run for real: pytest on the test side, the candidate in its own sandbox.

What a user's suite needs works (fixtures in conftest and module, parametrize, classes,
``pytest.raises``, ``pytest.approx``, ``monkeypatch`` of the test's own objects, skip/xfail, capsys,
tmp_path, test-side callbacks the candidate calls, ``bind_global``, the prompt's helpers); every
collected test is one outcome with its node id, duration and pytest's own failure text; a test's
own mistakes are ``broken``, the candidate's are its ``error``.
"""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path

import pytest

from oracle.config.model import OracleConfig
from oracle.results.result import Status
from oracle.strategies.protocol import EvaluationContext
from oracle.strategies.verifier.strategy import VerifierStrategy
from oracle.tasks.task import Task, Trajectory

pytestmark = pytest.mark.sandbox

PROMPT = '''LIMIT = None


def double(x):
    return 2 * x


class Stack:
    """A stack of at most LIMIT items (None: no limit); push raises OverflowError beyond it."""
'''
CONFTEST = '''
import pytest


@pytest.fixture(scope="session")
def words():
    return ["alpha", "beta", "gamma"]


@pytest.fixture
def limit_two():
    bind_global("LIMIT", 2)
    yield 2
    bind_global("LIMIT", None)
'''
HELPERS = '''
SCALE = 3


def scale(x):
    return SCALE * x


class Recorder:
    def __init__(self):
        self.seen = []

    def add(self, x):
        self.seen.append(x)
        return len(self.seen)
'''
FEATURES = '''
import pytest
from solution import Stack, apply_twice
import helpers


@pytest.mark.parametrize("n", [0, 1, 5])
def test_parametrize(n):
    s = Stack()
    for i in range(n):
        s.push(i)
    assert s.size() == n


class TestStack:
    def test_pop_order(self):
        s = Stack()
        s.push(1)
        s.push(2)
        assert [s.pop(), s.pop()] == [2, 1]

    def test_pop_empty_raises(self):
        with pytest.raises(IndexError):
            Stack().pop()


def test_approx():
    assert apply_twice(lambda x: x / 3, 1.0) == pytest.approx(1 / 9)


def test_callback_handle():
    r = helpers.Recorder()
    assert apply_twice(r.add, 7) == 2
    assert r.seen == [7, 1]


def test_monkeypatch_test_side(monkeypatch):
    monkeypatch.setattr(helpers, "SCALE", 10)
    assert apply_twice(helpers.scale, 1) == 100


def test_fixture(words):
    s = Stack()
    for w in words:
        s.push(w)
    assert s.pop() == words[-1]


def test_bind_global(limit_two):
    s = Stack()
    s.push(1)
    s.push(2)
    with pytest.raises(OverflowError):
        s.push(3)


def test_prompt_helper():
    assert double(apply_twice(lambda x: x + 1, 0)) == 4


def test_capsys_and_tmp_path(capsys, tmp_path):
    print("hi")
    assert capsys.readouterr().out == "hi\\n"
    (tmp_path / "f.txt").write_text("x")
    assert (tmp_path / "f.txt").read_text() == "x"


@pytest.mark.skip(reason="documented skip")
def test_skip():
    pass


@pytest.mark.xfail(reason="known gap")
def test_xfail():
    assert Stack().size() == 1


@pytest.mark.xfail(reason="passes anyway")
def test_xpass():
    assert Stack().size() == 0
'''
HONEST = '''
LIMIT = None


class Stack:
    def __init__(self):
        self._items = []

    def push(self, x):
        if LIMIT is not None and len(self._items) >= LIMIT:
            raise OverflowError("full")
        self._items.append(x)

    def pop(self):
        return self._items.pop()

    def size(self):
        return len(self._items)


def apply_twice(f, x):
    return f(f(x))
'''
WRONG = HONEST.replace("return self._items.pop()", "return self._items.pop(0)").replace(
    "return f(f(x))", "return f(x)")
FEATURE_TASK = Task(id="stack", prompt=PROMPT, entry_point="Stack", language="python", tests=[
    {"kind": "pytest", "name": "features",
     "files": {"conftest.py": CONFTEST, "helpers.py": HELPERS, "test_features.py": FEATURES}}])


def _evaluate(task: Task, trajectories, **verifier):
    from tests.test_pytest_integrity import BACKENDS
    from oracle.sandbox import probe

    backend = next((b for b in BACKENDS if b in probe().available), None)
    if backend is None:
        pytest.skip(f"no containment backend here: {probe().missing}")
    config = OracleConfig(verifier={"backend": backend, "workers": 2, **verifier})
    strategy = VerifierStrategy()
    try:
        return asyncio.run(strategy.evaluate(EvaluationContext(task=task, trajectories=tuple(trajectories),
                                                               config=config)))
    finally:
        strategy.close()


def _outcomes(candidate) -> dict[str, tuple[str, str]]:
    return {t["node_id"].split("::", 1)[1]: (t["outcome"], t["message"]) for t in candidate.details["tests"]}


def test_fixtures_parametrize_classes_raises_approx_monkeypatch_and_marks_work():
    result = _evaluate(FEATURE_TASK, [Trajectory(id="honest", code=HONEST), Trajectory(id="wrong", code=WRONG)])
    assert result.status is Status.ok, result.error
    honest = _outcomes(result.candidate("honest"))
    assert {k: v[0] for k, v in honest.items()} == {
        "test_parametrize[0]": "pass", "test_parametrize[1]": "pass", "test_parametrize[5]": "pass",
        "TestStack::test_pop_order": "pass", "TestStack::test_pop_empty_raises": "pass", "test_approx": "pass",
        "test_callback_handle": "pass", "test_monkeypatch_test_side": "pass", "test_fixture": "pass",
        "test_bind_global": "pass", "test_prompt_helper": "pass", "test_capsys_and_tmp_path": "pass",
        # skipped (or xfailed) for every candidate with no task.solution: never run, so broken (broken.py)
        "test_skip": "broken", "test_xfail": "broken", "test_xpass": "xpassed"}, honest
    assert "documented skip" in honest["test_skip"][1] and "not run" in honest["test_skip"][1]
    assert "known gap" in honest["test_xfail"][1]
    assert {b.test.rsplit("::", 1)[1] for b in result.broken_tests} == {"test_skip", "test_xfail"}
    tests = result.candidate("honest").details["tests"]
    assert all(t["weight"] == pytest.approx(1 / 15) for t in tests)  # the suite's weight split equally
    assert all(t["duration_ms"] > 0 for t in tests if t["outcome"] == "pass")
    wrong = _outcomes(result.candidate("wrong"))
    outcome, message = wrong["TestStack::test_pop_order"]
    assert outcome == "fail"
    # pytest's own assertion introspection: the compared values, and where in the task's file.
    assert "assert [1, 2] == [2, 1]" in message and "test_features.py:" in message, message
    assert wrong["test_approx"][0] == "fail" and "0.3333333333333333 == 0.1111111111111111 ±" in wrong["test_approx"][1]
    assert wrong["test_callback_handle"][0] == "fail"
    assert wrong["test_parametrize[5]"][0] == "pass"  # size() is right in both
    assert result.candidate("wrong").passed is False
    assert result.provenance.execution.pytest_version and result.provenance.execution.pytest_origin == "pinned"


CLASSIFY = Task(
    id="classify",
    prompt="",
    entry_point="Stack",
    language="python",
    tests=[
        {
            "kind": "pytest",
            "name": "needs_a_missing_module",
            "code": "import numpy_is_not_installed_here\ndef test_a():\n    assert Stack().size() == 0\n",
        },
        {
            "kind": "pytest",
            "name": "fixture_bug",
            "code": "import pytest\n@pytest.fixture\ndef data():\n    return {}['missing']\n"
            "def test_uses(data):\n    assert Stack().size() == 0\ndef test_fine():\n    assert Stack().size() == 0\n",
        },
        {
            "kind": "pytest",
            "name": "fixture_after_the_candidate",
            "code": "import pytest\n@pytest.fixture\ndef full():\n    s = Stack()\n    s.push(1)\n"
            "    return s.size() // 0\n"
            "def test_uses(full):\n    pass\n",
        },
        {
            "kind": "pytest",
            "name": "name_the_candidate_lacks",
            "code": "from solution import not_defined\ndef test_a():\n    assert not_defined() == 1\n",
        },
        {
            "kind": "pytest",
            "name": "selects_nothing",
            "select": "no_such_test",
            "code": "def test_a():\n    assert Stack().size() == 0\n",
        },
        {
            "kind": "pytest",
            "name": "selected_nodes",
            "select": ["test_task.py::test_one", "test_task.py::TestB::test_two"],
            "code": "def test_one():\n    assert Stack().size() == 0\ndef test_other():\n    assert False\n"
            "class TestB:\n    def test_two(self):\n        assert Stack().size() == 0\n",
        },
        {
            "kind": "pytest",
            "name": "patches_the_candidate",
            "code": "import solution\ndef test_a(monkeypatch):\n    monkeypatch.setattr(solution, 'LIMIT', 0)\n",
        },
    ],
)


def test_the_test_s_own_faults_are_broken_and_the_candidate_s_are_its_errors():
    result = _evaluate(CLASSIFY, [Trajectory(id="honest", code=HONEST)])
    assert result.status is Status.ok, result.error
    tests = {t["name"]: t for t in result.candidate("honest").details["tests"]}
    missing_module = tests["needs_a_missing_module::test_task.py"]
    assert missing_module["outcome"] == "broken" and "numpy_is_not_installed_here" in missing_module["message"]
    assert tests["fixture_bug::test_uses"]["outcome"] == "broken"
    assert "KeyError" in tests["fixture_bug::test_uses"]["message"]
    assert tests["fixture_bug::test_fine"]["outcome"] == "pass"
    assert tests["fixture_after_the_candidate::test_uses"]["outcome"] == "error"
    assert "ZeroDivisionError" in tests["fixture_after_the_candidate::test_uses"]["message"]
    lacking = tests["name_the_candidate_lacks::test_task.py"]
    assert lacking["outcome"] == "error" and "not_defined" in lacking["message"], lacking
    assert tests["selects_nothing"]["outcome"] == "broken"
    assert "select matched none" in tests["selects_nothing"]["message"]
    assert [n for n in tests if n.startswith("selected_nodes")] == ["selected_nodes::test_one",
                                                                   "selected_nodes::TestB::test_two"]
    assert all(tests[n]["outcome"] == "pass" for n in ("selected_nodes::test_one", "selected_nodes::TestB::test_two"))
    patched = tests["patches_the_candidate::test_a"]
    assert patched["outcome"] == "error" and "execution: in_process" in patched["message"], patched


def test_in_process_lets_a_test_patch_the_candidate_s_globals_and_says_so():
    task = Task(id="patch", prompt="", entry_point="Stack", language="python", execution="in_process", tests=[
        {"kind": "pytest", "code": "import pytest, solution\n"
                                   "def test_limit(monkeypatch):\n    monkeypatch.setattr(solution, 'LIMIT', 1)\n"
                                   "    s = Stack()\n    s.push(1)\n    with pytest.raises(OverflowError):\n"
                                   "        s.push(2)\n"}])
    result = _evaluate(task, [Trajectory(id="honest", code=HONEST)], allow_in_process=True)
    assert result.status is Status.ok, result.error
    [test] = result.candidate("honest").details["tests"]
    assert (test["outcome"], test["integrity"]) == ("pass", "in_process")
    assert result.provenance.integrity == "in_process"
    assert any(c.kind == "weak_isolation" for c in result.concerns)


@pytest.mark.slow
def test_a_suite_that_times_out_keeps_what_it_reported():
    task = Task(id="slow", prompt="", entry_point="Stack", language="python", tests=[
        {"kind": "pytest", "timeout_s": 3, "code": "def test_first():\n    assert Stack().size() == 0\n"
                                                   "def test_hangs():\n    Stack().push('hang')\n"
                                                   "def test_after():\n    assert Stack().size() == 0\n"}])
    slow = HONEST.replace("        self._items.append(x)", "        if x == 'hang':\n            import time\n"
                                                            "            time.sleep(60)\n        self._items.append(x)")
    result = _evaluate(task, [Trajectory(id="slow", code=slow)])
    assert result.status is Status.ok, result.error
    assert [(t["name"], t["outcome"]) for t in result.candidate("slow").details["tests"]] == [
        ("pytest[0]::test_first", "pass"), ("pytest[0]::test_hangs", "timeout"), ("pytest[0]::test_after", "timeout")]
    assert result.candidate("slow").passed is False


def test_the_pinned_pytest_is_read_only_and_content_addressed():
    from oracle.sandbox import pinned_pytest
    from oracle.strategies.verifier.strategy import find_interpreter

    interpreter = find_interpreter("python", OracleConfig().verifier)
    source = pinned_pytest.pinned(interpreter)
    assert source.origin == "pinned" and not source.plugin_autoload
    root = source.path
    assert os.path.basename(root).startswith(source.version + "-")
    modes = {os.stat(os.path.join(d, f)).st_mode & 0o777 for d, _, fs in os.walk(root) for f in fs}
    dirs = {os.stat(d).st_mode & 0o777 for d, _, _ in os.walk(root)}
    assert modes == {0o444} and dirs == {0o555}
    for name in ("pytest", "_pytest", "pluggy", "iniconfig", "packaging"):
        assert os.path.isdir(os.path.join(root, name)), name
    assert not any(f.endswith(".pth") or "entry_points" in f for _, _, fs in os.walk(root) for f in fs)


@pytest.mark.slow
def test_builders_at_once_and_a_copy_cut_short_still_give_a_whole_copy():
    """Threads of one process building the copy at once (a batch's first pytest tasks) once shared
    one temp dir by pid, and published a copy without ``_pytest/__init__.py`` that every later run
    reused; and a copy missing a file is set aside and rebuilt, never mounted."""
    import threading

    from oracle.sandbox import pinned_pytest
    from oracle.strategies.verifier.strategy import find_interpreter
    from tests.env_support import remove, world_readable_dir

    interpreter = find_interpreter("python", OracleConfig().verifier)
    root = world_readable_dir("oracle-pinned-race-")
    try:
        build = pinned_pytest._pinned.__wrapped__  # past the per-process cache, as a new process would
        results, errors = [], []

        def one():
            try:
                results.append(build(interpreter, str(root)))
            except Exception as exc:  # noqa: BLE001 - reported below
                errors.append(exc)

        threads = [threading.Thread(target=one) for _ in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert not errors, errors
        _version, _key, files = pinned_pytest._plan()
        [path] = {r.path for r in results}
        missing = [rel for rel, _p, _d in files if not os.path.isfile(os.path.join(path, rel))]
        assert not missing, missing
        assert [p.name for p in (root / "pytest").iterdir()] == [os.path.basename(path)]

        init = os.path.join(path, "_pytest", "__init__.py")
        os.chmod(os.path.dirname(init), 0o755)
        os.unlink(init)  # a copy an older release cut short
        again = build(interpreter, str(root))
        assert again.path == path and os.path.isfile(init)
        assert [p.name for p in (root / "pytest").iterdir()] == [os.path.basename(path)]
    finally:
        for d, _dirs, _files in os.walk(root):
            os.chmod(d, 0o755)
        remove(root)


def test_a_candidate_function_in_the_test_module_survives_pytest_s_unwrap_probe():
    """pytest 9.2 unwraps every object of a test module (``inspect.unwrap``, reading ``__wrapped__``)
    looking for fixtures behind decorators. Reading it of the imported candidate function once
    stopped collection with "needs in-process access", and a right candidate scored 0 on the most
    natural pytest test there is. A handle has no ``__wrapped__``: a plain miss, on any pytest."""
    task = Task(id="unwrap", prompt="", entry_point="slugify", language="python", tests=[
        {"kind": "pytest", "code": "import inspect\nfrom solution import slugify\n\n"
                                   "assert inspect.unwrap(slugify) is slugify\n"
                                   "assert not hasattr(slugify, '__wrapped__')\n\n"
                                   "def test_basic():\n    assert slugify('Hello World') == 'hello-world'\n"}])
    right = Trajectory(id="right", code="def slugify(text):\n    return '-'.join(text.lower().split())\n")
    wrapped = Trajectory(id="wrapped", code="import functools\n\ndef _inner(text):\n    return 'WRONG'\n\n"
                                            "@functools.wraps(_inner)\ndef slugify(text):\n"
                                            "    return '-'.join(text.lower().split())\n")
    wrong = Trajectory(id="wrong", code="def slugify(text):\n    return 'WRONG'\n")
    result = _evaluate(task, [right, wrapped, wrong])
    assert result.status is Status.ok, result.error
    outcomes = {c.id: [(t["name"], t["outcome"]) for t in c.details["tests"]] for c in result.candidates}
    assert outcomes == {"right": [("pytest[0]::test_basic", "pass")], "wrapped": [("pytest[0]::test_basic", "pass")],
                        "wrong": [("pytest[0]::test_basic", "fail")]}, outcomes


def test_the_module_name_is_the_task_s_and_only_the_test_side_has_pytest():
    """``task.module`` names the import; the candidate's process has no pytest loaded (the test
    workers preload it, the candidate's do not), and a bare candidate name needs no import."""
    task = Task(id="named", prompt="", entry_point="loaded", language="python", module="slugs", tests=[
        {"kind": "pytest", "code": "import sys\nimport slugs\nfrom slugs import loaded as imported\n"
                                   "def test_candidate_process_has_no_pytest():\n    assert imported() == []\n"
                                   "def test_bare_name():\n    assert loaded() == []\n"
                                   "def test_test_side_has_it():\n    assert 'pytest' in sys.modules\n"
                                   "def test_no_solution_module():\n    assert 'solution' not in sys.modules\n"}])
    code = ("import sys\n"
            "def loaded():\n"
            "    return sorted(m for m in sys.modules if m.split('.')[0] in ('pytest', '_pytest', 'pluggy'))\n")
    result = _evaluate(task, [Trajectory(id="probe", code=code)])
    assert result.status is Status.ok, result.error
    assert {t["name"]: t["outcome"] for t in result.candidate("probe").details["tests"]} == {
        "pytest[0]::test_candidate_process_has_no_pytest": "pass", "pytest[0]::test_bare_name": "pass",
        "pytest[0]::test_test_side_has_it": "pass", "pytest[0]::test_no_solution_module": "pass"}


@pytest.mark.slow
@pytest.mark.skipif(os.geteuid() != 0, reason="without root the sandbox keeps the caller's uid: nothing to refuse")
def test_a_cache_dir_the_sandbox_user_cannot_read_is_refused_with_the_fix(tmp_path, monkeypatch):
    from oracle.errors import SandboxError
    from oracle.sandbox import pinned_pytest
    from oracle.strategies.verifier.strategy import find_interpreter

    private = tmp_path / "private"
    private.mkdir(mode=0o700)
    monkeypatch.setenv(pinned_pytest.CACHE_ENV, str(private / "cache"))
    try:
        with pytest.raises(SandboxError, match="set ORACLE_CACHE_DIR to a directory it can read"):
            pinned_pytest.pinned(find_interpreter("python", OracleConfig().verifier))
    finally:
        for d, _dirs, _files in os.walk(private):
            os.chmod(d, 0o700)


@pytest.mark.slow
def test_a_task_environment_that_has_pytest_runs_its_pytest_with_its_plugins():
    """An environment with pytest (here a venv the user prepared, pytest and a plugin in it) is the
    test side's pytest: its plugins load (autoload on), the pinned copy stays off the path."""
    import shutil
    import subprocess

    from oracle.sandbox import pinned_pytest
    from oracle.strategies.verifier.strategy import find_interpreter
    from tests.env_support import remove, world_readable_dir

    python = find_interpreter("python", OracleConfig().verifier)
    top = world_readable_dir("oracle-pytest-venv-")
    try:
        subprocess.run([python, "-m", "venv", "--without-pip", str(top / "venv")], check=True, timeout=120)
        [site] = sorted((top / "venv").glob("lib/python3*/site-packages"))
        copy = Path(pinned_pytest.pinned(python).path)
        for entry in copy.iterdir():
            (shutil.copytree if entry.is_dir() else shutil.copy2)(entry, site / entry.name)
        (site / "envplugin.py").write_text("import pytest\n\n@pytest.fixture\ndef from_the_plugin():\n"
                                           "    return 'plugin'\n")
        info = site / "envplugin-1.0.dist-info"
        info.mkdir()
        (info / "METADATA").write_text("Metadata-Version: 2.1\nName: envplugin\nVersion: 1.0\n")
        (info / "entry_points.txt").write_text("[pytest11]\nenvplugin = envplugin\n")
        for d, _dirs, files in os.walk(site):  # what was copied in; never through a link (bin/python)
            os.chmod(d, 0o755)
            for f in files:
                if not os.path.islink(os.path.join(d, f)):
                    os.chmod(os.path.join(d, f), 0o644)
        task = Task(id="env-pytest", prompt="", entry_point="f", language="python",
                    environment={"python": str(top / "venv" / "bin" / "python")}, tests=[
                        {"kind": "pytest", "code": "import pytest\n"
                                                   "def test_plugin(from_the_plugin):\n"
                                                   "    assert f() == from_the_plugin\n"
                                                   "def test_which_pytest():\n"
                                                   "    assert '/venv/' in pytest.__file__, pytest.__file__\n"}])
        result = _evaluate(task, [Trajectory(id="c", code="def f():\n    return 'plugin'\n")])
        assert result.status is Status.ok, result.error
        assert [(t["name"], t["outcome"]) for t in result.candidate("c").details["tests"]] == [
            ("pytest[0]::test_plugin", "pass"), ("pytest[0]::test_which_pytest", "pass")], \
            result.candidate("c").details["tests"]
        run = result.provenance.execution
        assert (run.pytest_origin, run.pytest_version) == ("environment", pinned_pytest.pinned(python).version)
    finally:
        remove(top)


def test_a_skip_the_reference_solution_shows_too_is_neutral():
    """With ``task.solution``, a test skipped or xfailed on the reference as on the candidate is
    neutral (scored for nobody) instead of broken; the reference runs the suite as candidates do."""
    task = Task(id="neutral", prompt="", entry_point="f", language="python", solution="def f():\n    return 1\n",
                tests=[{"kind": "pytest", "name": "s", "code":
                        "import pytest\ndef test_a():\n    assert f() == 1\n"
                        "@pytest.mark.skip(reason='later')\ndef test_skip():\n    pass\n"
                        "@pytest.mark.xfail(reason='known')\ndef test_xfail():\n    assert f() == 2\n"}])
    result = _evaluate(task, [Trajectory(id="c", code="def f():\n    return 1\n")])
    assert result.status is Status.ok, result.error
    assert result.broken_tests == []
    tests = {t["name"]: t for t in result.candidate("c").details["tests"]}
    assert [(n, t["outcome"], bool(t.get("neutral"))) for n, t in tests.items()] == [
        ("s::test_a", "pass", False), ("s::test_skip", "skipped", True), ("s::test_xfail", "xfailed", True)]
    assert result.candidate("c").score == 1.0
    assert result.details["reference_solution"]["outcomes"]["s::test_skip"] == "skipped"


def test_a_file_that_fails_to_collect_in_one_run_stands_for_its_tests_there_only():
    """A module that calls the candidate at import collects nothing for a candidate that raises: that
    candidate errs on each test the others collected, and the others are not charged for its file."""
    task = Task(id="import-time", prompt="", entry_point="f", language="python", tests=[
        {"kind": "pytest", "code": "VALUE = f()\ndef test_value():\n    assert VALUE == 1\n"
                                   "def test_call():\n    assert f() == 1\n"}])
    result = _evaluate(task, [Trajectory(id="honest", code="def f():\n    return 1\n"),
                              Trajectory(id="raises", code="def f():\n    raise ValueError('no')\n")])
    assert result.status is Status.ok, result.error
    assert result.broken_tests == []
    honest, raises = result.candidate("honest"), result.candidate("raises")
    assert [(t["name"], t["outcome"]) for t in honest.details["tests"]] == [
        ("pytest[0]::test_value", "pass"), ("pytest[0]::test_call", "pass")]
    assert honest.score == 1.0 and honest.passed is True
    assert [(t["name"], t["outcome"]) for t in raises.details["tests"]] == [
        ("pytest[0]::test_value", "error"), ("pytest[0]::test_call", "error")]
    assert all("ValueError: no" in t["message"] for t in raises.details["tests"])
    assert raises.score == 0.0


@pytest.mark.slow
def test_oracle_check_runs_a_pytest_suite_on_the_reference_and_names_a_case_that_fails_there():
    """``oracle check``: each collected test's outcome on ``task.solution``; a case that fails on it
    is broken (exit 3), the others are not."""
    import subprocess
    import sys

    from tests.env_support import remove, world_readable_dir

    top = world_readable_dir("oracle-pytest-check-")
    try:
        task = {"task": {"id": "check-pytest", "prompt": "", "entry_point": "double", "language": "python",
                         "solution": "def double(x):\n    return 2 * x\n",
                         "tests": [{"kind": "pytest", "name": "suite", "code":
                                    "def test_right():\n    assert double(2) == 4\n"
                                    "def test_wrong_expectation():\n    assert double(2) == 5\n"}]},
                "trajectories": [{"id": "c", "code": "def double(x):\n    return x + x\n"}]}
        path = top / "task.json"
        path.write_text(json.dumps(task))
        done = subprocess.run([sys.executable, "-m", "oracle", "check", str(path)], capture_output=True, text=True,
                              timeout=300, cwd=Path(__file__).resolve().parent.parent)
        assert done.returncode == 3, (done.stdout, done.stderr)
        lines = {line.split()[0]: line for line in done.stdout.splitlines() if line.startswith("suite::")}
        assert "pass" in lines["suite::test_right"]
        assert "broken" in lines["suite::test_wrong_expectation"] and "assert 4 == 5" in done.stdout
    finally:
        remove(top)
