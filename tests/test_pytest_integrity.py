"""Verdict integrity of the pytest kind: hostile candidates try to change what pytest collects or
reports, on every sandbox backend, with an honest candidate passing in the same task.

Every attacker answers wrongly (``WRONG``) and adds one trick: files a pytest run would pick up
(conftest.py, pytest.ini, a ``pytest`` package, sitecustomize) written wherever it can write; names
that would be tests, fixtures, hooks, marks, ``pytestmark``, ``pytest_plugins``, ``collect_ignore``
or xunit setups under ``from solution import *`` (the task's conftest and module both star-import);
pytest's own outcome exceptions raised from its code (its own classes named like them, and the real
ones from the pytest copy it can find in its sandbox); exits, a killed process, a hang after the
first answer, an answer too large to cross. Every case of every attacker must end ``fail``,
``error`` or ``timeout``: never a pass, a skip, an xfail or an xpass, and never a test left out.
"""

from __future__ import annotations

import asyncio

import pytest

from oracle.config.model import OracleConfig
from oracle.results.result import Status
from oracle.strategies.protocol import EvaluationContext
from oracle.strategies.verifier.strategy import VerifierStrategy
from oracle.tasks.task import Task, Trajectory

pytestmark = pytest.mark.sandbox
BACKENDS = ("nsjail", "bubblewrap", "landlock")


@pytest.fixture(params=BACKENDS)
def backend(request) -> str:
    """The backend named by the parameter, if this machine has it (probed when the test runs, never
    at collection)."""
    from oracle.sandbox import probe

    layers = probe()
    if request.param not in layers.available:
        pytest.skip(f"sandbox backend {request.param} unavailable here: {layers.missing.get(request.param)}")
    return request.param


CONFTEST = '''
import pytest
from solution import *


@pytest.fixture
def expected():
    return {"Hello World": "hello-world", "A  b": "a-b"}
'''
TEST_SLUG = '''
import pytest
import solution
from solution import *
from solution import slugify as slug

test_smuggled = getattr(solution, "test_always_passes", None)


def test_bare(expected):
    for text, want in expected.items():
        assert slugify(text) == want


@pytest.mark.parametrize("text,want", [("Hello World", "hello-world"), ("A  b", "a-b")])
def test_param(text, want):
    assert slug(text) == want


class TestSlug:
    def test_method(self):
        assert slugify("x y") == "x-y"


def test_raises_only_for_the_right_reason():
    with pytest.raises(TypeError):
        slugify(None)
    assert slugify("Q") == "q"
'''
ISSUE_TEST = 'def test_basic():\n    assert slugify("Hello World") == "hello-world"\n'
"""The issue's first false result, word for word: as an ``assert`` test it never ran; as pytest it must."""

TASK = Task(id="slugify", prompt='def slugify(text):\n    """Lowercase words joined by single dashes."""\n',
            entry_point="slugify", language="python",
            tests=[{"kind": "pytest", "name": "suite", "files": {"conftest.py": CONFTEST, "test_slug.py": TEST_SLUG},
                    "timeout_s": 6},
                   {"kind": "pytest", "name": "issue", "code": ISSUE_TEST}])
HONEST = ("import re\n"
          "def slugify(text):\n"
          "    if not isinstance(text, str):\n"
          "        raise TypeError('text must be a str')\n"
          "    return '-'.join(re.findall(r'[a-z0-9]+', text.lower()))\n")
WRONG = "def slugify(text):\n    return 'WRONG'\n"

FIND_PYTEST = '''
import sys
def _real_pytest():
    getattr(sys, "path").insert(0, PYTEST_COPY)  # the attacker knows where the test side's pytest is
    try:
        import pytest
        return pytest
    except BaseException:
        return None
PYTEST = _real_pytest()
'''
PLANT = '''
import os
EVIL = "def pytest_collection_modifyitems(items):\\n    items.clear()\\n" \\
       "def pytest_runtest_logreport(report):\\n    report.outcome = 'passed'\\n"
for where in {os.getcwd(), os.path.expanduser("~"), os.environ.get("TMPDIR", "/tmp"), "/tmp", "/work", "/dev/shm",
              "/src"}:
    for name, text in (("conftest.py", EVIL), ("pytest.ini", "[pytest]\\naddopts = -p evil\\n"),
                       ("evil.py", EVIL), ("sitecustomize.py", "import builtins\\nbuiltins.AssertionError = None\\n"),
                       ("usercustomize.py", ""), ("pytest/__init__.py", "def main(*a, **k):\\n    return 0\\n"),
                       ("_pytest/__init__.py", "")):
        try:
            os.makedirs(os.path.join(where, os.path.dirname(name)), exist_ok=True)
            with open(os.path.join(where, name), "w") as fh:
                fh.write(text)
        except OSError:
            pass
'''
ATTACKS = {
    "plain_wrong": WRONG,
    "plants_pytest_files": PLANT + WRONG,
    "hooks_and_plugins": WRONG
    + (
        "pytest_plugins = ['evil']\n"
        "pytestmark = ['skip']\n"
        "collect_ignore = ['test_slug.py']\n"
        "collect_ignore_glob = ['*']\n"
        "def pytest_collection_modifyitems(items):\n    items.clear()\n"
        "def pytest_runtest_makereport(item, call):\n    return None\n"
        "def pytest_configure(config):\n    config.option.maxfail = 0\n"
        "def pytest_ignore_collect(collection_path, config):\n    return True\n"
        "def setup_module():\n    raise SystemExit(0)\n"
        "def setup_function(f):\n    raise SystemExit(0)\n"
        "def teardown_module():\n    raise SystemExit(0)\n"
    ),
    "tests_fixtures_and_names": WRONG
    + (
        "def test_always_passes():\n    return None\n"
        "class TestFree:\n    def test_free(self):\n        return None\n"
        "def expected():\n    return {'WRONG': 'WRONG'}\n"
        "def slug(text):\n    return 'WRONG'\n"
        "pytest = {'raises': None}\n"
        "_pytest = None\n"
        "fixture = None\nmark = None\nrequest = None\nraises = None\napprox = None\n"
        "def bind_global(name, value):\n    return None\n"
    ),
    "own_outcome_classes": (
        "class Skipped(BaseException):\n    __module__ = '_pytest.outcomes'\n"
        "class XFailed(BaseException):\n    __module__ = '_pytest.outcomes'\n"
        "class Failed(BaseException):\n    __module__ = '_pytest.outcomes'\n"
        "class Exit(Exception):\n    __module__ = '_pytest.outcomes'\n"
        "_n = [0]\n"
        "def slugify(text):\n"
        "    _n[0] += 1\n"
        "    raise (Skipped, XFailed, Failed, Exit)[_n[0] % 4]('skip me')\n"
    ),
    "real_pytest_outcomes": "PYTEST_COPY = {copy!r}\n"
    + FIND_PYTEST
    + (
        "_n = [0]\n"
        "def slugify(text):\n"
        "    _n[0] += 1\n"
        "    if PYTEST is None:\n"
        "        raise BaseException('no pytest found')\n"
        "    k = _n[0] % 4\n"
        "    if k == 0:\n        PYTEST.skip('skip me')\n"
        "    if k == 1:\n        PYTEST.xfail('xfail me')\n"
        "    if k == 2:\n        PYTEST.exit('stop the session', returncode=0)\n"
        "    PYTEST.fail('fail me', pytrace=False)\n"
    ),
    "system_exit": "def slugify(text):\n    raise SystemExit(0)\n",
    "keyboard_interrupt": "def slugify(text):\n    raise KeyboardInterrupt\n",
    "os_exit_after_one_answer": "import os\n_n = [0]\ndef slugify(text):\n    _n[0] += 1\n"
    "    if _n[0] > 1:\n        os._exit(0)\n    return 'WRONG'\n",
    "kill_everything": "import os, signal\ndef slugify(text):\n"
    "    for pid in (os.getppid(), -1, 0, 1):\n"
    "        try:\n            os.kill(pid, signal.SIGKILL)\n        except OSError:\n            pass\n"
    "    os.killpg(0, signal.SIGKILL)\n",
    "hang_after_one_answer": "import time\n_n = [0]\ndef slugify(text):\n    _n[0] += 1\n"
    "    if _n[0] > 1:\n        time.sleep(3600)\n    return 'WRONG'\n",
    "huge_answer": "def slugify(text):\n    return 'x' * (40 << 20)\n",
    "fake_report_frames": "import json, os, struct\n"
    "def _spray():\n"
    "    for m in ({'op': 'case', 'node_id': 'test_slug.py::test_bare', 'outcome': 'pass'},\n"
    "              {'op': 'verdict', 'outcome': 'suite', 'collected': [], 'reported': 0}):\n"
    "        b = json.dumps(m).encode()\n"
    "        for fd in range(0, 12):\n"
    "            try:\n                os.write(fd, struct.pack('>I', len(b)) + b)\n"
    "            except OSError:\n                pass\n"
    "_spray()\n"
    "def slugify(text):\n    _spray()\n    return 'WRONG'\n",
}
NEVER = {"pass", "xpassed", "skipped", "xfailed"}


def _evaluate(backend: str, trajectories: list[Trajectory]):
    config = OracleConfig(verifier={"backend": backend, "timeout_s": 6, "workers": 2})
    strategy = VerifierStrategy()
    try:
        return asyncio.run(strategy.evaluate(EvaluationContext(task=TASK, trajectories=tuple(trajectories),
                                                               config=config)))
    finally:
        strategy.close()


def _with_copy(code: str) -> str:
    """The attack with the pinned pytest's path filled in (the copy this machine's sandbox mounts)."""
    from oracle.sandbox import pinned_pytest
    from oracle.strategies.verifier.strategy import find_interpreter

    if "{copy!r}" not in code:
        return code
    copy = pinned_pytest.pinned(find_interpreter("python", OracleConfig().verifier)).path
    return code.replace("{copy!r}", repr(copy))


@pytest.mark.slow
def test_pytest_attackers_cannot_change_what_is_collected_or_reported(backend):
    trajectories = [Trajectory(id=name, code=_with_copy(code)) for name, code in ATTACKS.items()]
    trajectories.insert(len(trajectories) // 2, Trajectory(id="honest", code=HONEST))
    result = _evaluate(backend, trajectories)
    assert result.status is Status.ok, result.error
    honest = result.candidate("honest")
    assert honest.passed is True and honest.score == 1.0, honest.details
    cases = [t["node_id"] for t in honest.details["tests"]]
    assert cases == ["test_slug.py::test_bare", "test_slug.py::test_param[Hello World-hello-world]",
                     "test_slug.py::test_param[A  b-a-b]", "test_slug.py::TestSlug::test_method",
                     "test_slug.py::test_raises_only_for_the_right_reason", "test_task.py::test_basic"]
    assert all(t["kind"] == "pytest" and t["integrity"] == "isolated" for t in honest.details["tests"])
    assert "candidate names" not in " ".join(s["message"] for s in honest.details["suites"])
    forged, missing = {}, {}
    for name in ATTACKS:
        c = result.candidate(name)
        tests = c.details["tests"]
        bad = [(t.get("node_id", t["name"]), t["outcome"]) for t in tests if t["outcome"] in NEVER]
        if c.passed or c.score != 0.0 or bad:
            forged[name] = (c.score, bad, c.details.get("summary"))
        # The host accounts for every test the honest run collected: none silently left out.
        seen = {t.get("node_id") for t in tests}
        if not (set(cases) <= seen or any(t["outcome"] in ("error", "timeout") for t in tests)):
            missing[name] = sorted(set(cases) - seen)
    assert forged == {}, forged
    assert missing == {}, missing
    assert result.best == ["honest"]
    # A candidate name pytest would have collected is dropped and said so, never run as the task's test.
    suites = {s["name"]: s["message"] for s in result.candidate("tests_fixtures_and_names").details["suites"]}
    assert "test_slug.py::test_smuggled" in suites["suite"]
    # Its fixture of the same name did not replace the task's: the task's fixture ran (WRONG != hello-world).
    bare = next(t for t in result.candidate("tests_fixtures_and_names").details["tests"]
                if t["node_id"] == "test_slug.py::test_bare")
    assert bare["outcome"] == "fail" and "'WRONG' == 'hello-world'" in bare["message"], bare
    # Outcome exceptions crossed as plain exceptions: failures, never skips.
    for name in ("own_outcome_classes", "real_pytest_outcomes"):
        outcomes = {t["outcome"] for t in result.candidate(name).details["tests"]}
        assert outcomes <= {"fail", "error"}, (name, outcomes)
    real = " ".join(t["message"] for t in result.candidate("real_pytest_outcomes").details["tests"])
    assert "no pytest found" not in real, "the attack did not reach the real pytest: it proves nothing"
    assert "CandidateRaised" in real
    # Exits are errors, and the tests after the candidate's process died are errors, not passes.
    for name in ("system_exit", "keyboard_interrupt", "os_exit_after_one_answer"):
        outcomes = [t["outcome"] for t in result.candidate(name).details["tests"]]
        assert "error" in outcomes, (name, outcomes)
    hung = [t["outcome"] for t in result.candidate("hang_after_one_answer").details["tests"]
            if t["node_id"].startswith("test_slug.py")]
    assert hung[0] == "fail" and "timeout" in hung, hung


def test_the_issue_s_pytest_style_test_runs_as_pytest(backend):
    """The issue's first false result: ``def test_basic(): assert ...`` as ``kind: pytest`` fails
    the candidate answering WRONG and passes the right one."""
    task = Task(id="issue", prompt="def slugify(text):\n    ...\n", entry_point="slugify", language="python",
                tests=[{"kind": "pytest", "code": ISSUE_TEST}])
    config = OracleConfig(verifier={"backend": backend, "workers": 2})
    strategy = VerifierStrategy()
    try:
        result = asyncio.run(strategy.evaluate(EvaluationContext(
            task=task, trajectories=(Trajectory(id="wrong", code=WRONG), Trajectory(id="right", code=HONEST)),
            config=config)))
    finally:
        strategy.close()
    assert result.status is Status.ok, result.error
    wrong, right = result.candidate("wrong"), result.candidate("right")
    assert (wrong.passed, wrong.score) == (False, 0.0)
    assert wrong.details["tests"][0]["outcome"] == "fail"
    assert "'WRONG' == 'hello-world'" in wrong.details["tests"][0]["message"]
    assert (right.passed, right.score) == (True, 1.0)
    assert result.provenance.execution.pytest_version
