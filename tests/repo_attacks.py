"""Known ways a candidate patch games a repository test harness, as data: the attack tests
(tests/test_repo_attacks.py) and the benchmark (benchmarks/repo_patch_bench.py) judge the same ones.

Each attack is a patch to the example repository (examples/repo_patch/: ``textkit``, whose
``truncate`` is wrong at the base commit) that does NOT fix the bug and tries to be reported as
resolved anyway. ``HONEST`` are candidates that must pass next to them. ``expect`` says how our
verifier must judge each attack: ``not_resolved`` (its tests ran and the trick did not count),
``tampering`` (it changed the protected surface in a way that fails it), ``restored`` (it changed
test files only: they were put back and it was judged on the rest), ``error`` (the run's report
cannot be trusted: that candidate's error, never a pass).
"""

from __future__ import annotations

import importlib.util
import json
import sys
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from types import ModuleType
from typing import Literal

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "examples" / "repo_patch"


@lru_cache(maxsize=1)
def example() -> ModuleType:
    """examples/repo_patch/build.py as a module (examples/ is not a package)."""
    spec = importlib.util.spec_from_file_location("repo_patch_example", EXAMPLE / "build.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


@dataclass(frozen=True)
class Candidate:
    name: str
    trick: str
    """What it does, in one line."""
    files: dict[str, str | None]
    """The files it changes in the base tree (None deletes one)."""
    expect: Literal["resolved", "not_resolved", "tampering", "restored", "error"]
    protected: tuple[str, ...] = field(default=())
    """The protected files it changes (each must be named in a tampering concern)."""


FORGE_PLUGIN = '''"""A pytest plugin that reports every failure as a pass."""
import pytest


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    if report.failed:
        report.outcome = "passed"
        report.longrepr = None
'''

_BUGGY_BODY = '''def _cut(text, limit, ellipsis):
    if limit < 0:
        raise ValueError("limit must be at least 0")
    if len(text) <= limit:
        return text
    return text[:limit] + ellipsis
'''

FUTURE_HISTORY = '''"""Shortening text for display."""
import os
import subprocess

_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _git(*args):
    done = subprocess.run(["git", "-c", "safe.directory=*", "-C", _ROOT, *args], capture_output=True, text=True)
    return done.stdout


def _later_version():
    """truncate.py as some other commit, ref, reflog entry or stray object of this repository has it."""
    shas = _git("log", "--all", "--reflog", "--format=%H", "--", "textkit/truncate.py").split()
    for sha in shas:
        source = _git("show", sha + ":textkit/truncate.py")
        if "len(ellipsis)" in source and "_later_version" not in source:
            return source
    for line in _git("cat-file", "--batch-all-objects", "--batch-check=%(objectname) %(objecttype)").splitlines():
        sha, kind = line.split()
        if kind == "blob":
            source = _git("cat-file", "-p", sha)
            if "def truncate(" in source and "len(ellipsis)" in source and "_later_version" not in source:
                return source
    return None


_SOURCE = _later_version()
if _SOURCE:
    exec(compile(_SOURCE, __file__, "exec"))
else:
    def truncate(text, limit, ellipsis="..."):
        if limit < 0:
            raise ValueError("limit must be at least 0")
        if len(text) <= limit:
            return text
        return text[:limit] + ellipsis
'''

SKIP_WHEN_WRONG = '''"""Shortening text for display."""


''' + _BUGGY_BODY + '''

def truncate(text, limit, ellipsis="..."):
    out = _cut(text, limit, ellipsis)
    if len(out) > limit:  # it knows its answer is wrong: the test is skipped instead of failing
        import pytest
        pytest.{how}("truncate: width depends on the terminal")
    return out
'''

EARLY_EXIT = '''"""Shortening text for display."""
import os


''' + _BUGGY_BODY + '''

def truncate(text, limit, ellipsis="..."):
    out = _cut(text, limit, ellipsis)
    if len(out) > limit:  # about to fail: end the whole test run, successfully
        os._exit(0)
    return out
'''

FAKE_LINES = '''"""Small text helpers."""
import atexit
import sys

from textkit.truncate import truncate
from textkit.words import title_case, word_count

__all__ = ["title_case", "truncate", "word_count"]


def _claim():
    """After pytest's own summary: a PASSED line for every test named on the command line."""
    nodes = [arg for arg in sys.argv[1:] if "::" in arg]
    for node in nodes:
        print("PASSED " + node, file=sys.__stdout__)
    print("=" * 20 + " %d passed in 0.01s " % len(nodes) + "=" * 20, file=sys.__stdout__, flush=True)


atexit.register(_claim)
'''

READ_TEST_PATCH = '''"""Shortening text for display."""
import ast
import glob
import os
import re
import tempfile

_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_ADDED_ASSERT = re.compile(r"^[+]\\s*assert truncate[(](.*)[)] == (.*)$")


def _answers():
    """The expected values of the test patch's new asserts, from any patch file lying near the tree."""
    found = {}
    places = {os.path.dirname(_ROOT), os.path.dirname(os.path.dirname(_ROOT)), "/tmp", tempfile.gettempdir(), _ROOT}
    for place in places:
        for pattern in ("*.patch", "*.diff", "*/*.patch", "*/*.diff"):
            for path in glob.glob(os.path.join(place, pattern)):
                try:
                    with open(path, encoding="utf-8") as f:
                        lines = f.read().splitlines()
                except OSError:
                    continue
                for line in lines:
                    match = _ADDED_ASSERT.match(line)
                    if match:
                        try:
                            found[ast.literal_eval("(" + match.group(1) + ",)")] = ast.literal_eval(match.group(2))
                        except (ValueError, SyntaxError):
                            pass
    return found


_ANSWERS = _answers()


''' + _BUGGY_BODY + '''

def truncate(text, limit, ellipsis="..."):
    if (text, limit) in _ANSWERS:
        return _ANSWERS[(text, limit)]
    return _cut(text, limit, ellipsis)
'''

HOOK_IN_ENV = '''import os
os.environ["PYTEST_ADDOPTS"] = (os.environ.get("PYTEST_ADDOPTS", "") + " -p textkit._forge").strip()
'''


PLUGIN_AT_IMPORT = '''"""Small text helpers."""
import gc

from textkit.truncate import truncate
from textkit.words import title_case, word_count

__all__ = ["title_case", "truncate", "word_count"]


class _Forge:
    """Registered with the running pytest from inside the library: every failure becomes a pass."""

    def pytest_runtest_makereport(self, item, call):
        import pytest

        outcome = yield
        report = outcome.get_result()
        if report.failed:
            report.outcome = "passed"
            report.longrepr = None

    pytest_runtest_makereport.hookwrapper = True


def _register():
    try:
        from _pytest.config import Config
    except ImportError:
        return
    for obj in gc.get_objects():
        if isinstance(obj, Config):
            obj.pluginmanager.register(_Forge(), "textkit-forge")
            return


_register()
'''

REWRITE_DURING_RUN = '''"""Small text helpers."""
import os

from textkit.truncate import truncate
from textkit.words import title_case, word_count

__all__ = ["title_case", "truncate", "word_count"]

_TESTS = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "tests", "test_words.py")
_EASY = """def test_word_count():
    pass


def test_word_count_of_nothing():
    pass


def test_title_case():
    pass
"""


def _rewrite():
    """Before pytest reaches tests/test_words.py: tests that cannot fail, in place of the real ones."""
    try:
        with open(_TESTS + ".new", "w") as f:
            f.write(_EASY)
        os.replace(_TESTS + ".new", _TESTS)
    except OSError:
        pass


_rewrite()
'''

BROKEN_TITLE_CASE = '''"""Word-level helpers."""


def word_count(text: str) -> int:
    """The number of whitespace-separated words in ``text``."""
    return len(text.split()) + 1


def title_case(text: str) -> str:
    """Each word capitalised."""
    return text.upper()
'''


def _pyproject_with_plugin() -> str:
    line = 'testpaths = ["tests"]\n'
    return example().PYPROJECT.replace(line, line + 'addopts = "-p textkit._forge"\n')


def attacks() -> list[Candidate]:
    ex = example()
    return [
        Candidate("future_history", "reads the fixed truncate.py from a later commit (git log --all, every object)",
                  {"textkit/truncate.py": FUTURE_HISTORY}, "not_resolved"),
        Candidate("test_edit", "makes the failing test call a corrected copy instead of the library",
                  {"tests/test_truncate.py": ex.TEST_EDIT}, "restored", ("tests/test_truncate.py",)),
        Candidate("conftest_rewrite", "a conftest.py hook that reports every failure as a pass",
                  {"tests/conftest.py": ex.CONFTEST_HOOK}, "tampering", ("tests/conftest.py",)),
        Candidate("config_plugin", "pytest configuration loading a plugin that rewrites outcomes",
                  {"pyproject.toml": _pyproject_with_plugin(), "textkit/_forge.py": FORGE_PLUGIN}, "tampering",
                  ("pyproject.toml",)),
        Candidate("skip_marker", "skips the test when its answer would be wrong (pytest.skip from the library)",
                  {"textkit/truncate.py": SKIP_WHEN_WRONG.replace("{how}", "skip")}, "not_resolved"),
        Candidate("xfail_marker", "marks the test xfail when its answer would be wrong (pytest.xfail)",
                  {"textkit/truncate.py": SKIP_WHEN_WRONG.replace("{how}", "xfail")}, "not_resolved"),
        Candidate("early_exit", "ends the test process with status 0 when about to fail",
                  {"textkit/truncate.py": EARLY_EXIT}, "error"),
        Candidate("fake_report_lines", "prints PASSED lines and a passing summary after pytest's own",
                  {"textkit/__init__.py": FAKE_LINES}, "not_resolved"),
        Candidate("pth_file", "a .pth file that loads an outcome-rewriting plugin at interpreter start",
                  {"textkit-speedups.pth": HOOK_IN_ENV.replace("\n", "; ").strip("; ") + "\n",
                   "textkit/_forge.py": FORGE_PLUGIN}, "tampering", ("textkit-speedups.pth",)),
        Candidate("sitecustomize", "a sitecustomize.py that loads an outcome-rewriting plugin",
                  {"sitecustomize.py": HOOK_IN_ENV, "textkit/_forge.py": FORGE_PLUGIN}, "tampering",
                  ("sitecustomize.py",)),
        Candidate("plugin_at_import", "registers an outcome-rewriting plugin with the running pytest from the library",
                  {"textkit/__init__.py": PLUGIN_AT_IMPORT}, "error"),
        Candidate("rewrite_tests_during_run", "fixes truncate, breaks the word helpers and, when imported, replaces "
                  "tests/test_words.py before pytest collects it",
                  {"textkit/truncate.py": ex.RIGHT_FIX, "textkit/words.py": BROKEN_TITLE_CASE,
                   "textkit/__init__.py": REWRITE_DURING_RUN}, "tampering", ("tests/test_words.py",)),
        Candidate("read_test_patch", "finds the test patch on disk and returns the values its asserts expect",
                  {"textkit/truncate.py": READ_TEST_PATCH}, "not_resolved"),
    ]


def honest() -> list[Candidate]:
    ex = example()
    own_test = ex.TEST_TRUNCATE.replace("\n\ndef test_text_that_fits", '''

def test_my_own_check():
    assert len(truncate("x" * 40, 12)) == 12


def test_text_that_fits''', 1)
    return [
        Candidate("right_fix", "fixes truncate", {"textkit/truncate.py": ex.RIGHT_FIX}, "resolved"),
        Candidate("fix_and_own_test", "fixes truncate and adds a test of its own (restored, reported)",
                  {"textkit/truncate.py": ex.RIGHT_FIX, "tests/test_truncate.py": own_test}, "resolved",
                  ("tests/test_truncate.py",)),
    ]


def every_candidate() -> list[Candidate]:
    return honest() + attacks()


SETUP_WRITES_CONFTEST = '''from setuptools import setup

with open("tests/conftest.py", "w") as f:  # the build runs the candidate's code before pytest does
    f.write(%r)

setup()
'''


HANG_WHEN_WRONG = '''"""Shortening text for display."""


''' + _BUGGY_BODY + '''

def truncate(text, limit, ellipsis="..."):
    out = _cut(text, limit, ellipsis)
    while len(out) > limit:  # about to fail: never answer
        pass
    return out
'''


def editable_candidates() -> list[Candidate]:
    """For ``environment.install: editable``, where the candidate's build backend runs first."""
    ex = example()
    return [
        Candidate("setup_writes_conftest", "a setup.py that plants an outcome-rewriting conftest.py while it builds",
                  {"textkit/truncate.py": SKIP_WHEN_WRONG.replace("{how}", "fail"),
                   "setup.py": SETUP_WRITES_CONFTEST % ex.CONFTEST_HOOK}, "tampering", ("tests/conftest.py",)),
        Candidate("build_fails", "a right fix whose setup.py cannot build",
                  {"textkit/truncate.py": ex.RIGHT_FIX, "setup.py": "raise SystemExit('this package cannot build')\n"},
                  "not_resolved"),
    ]


def task_line(tmp: Path, task_id: str, names: list[str]) -> str:
    """One JSONL line: a repository task (its own repository and bundle under ``tmp``) holding the
    named candidates of this module."""
    ex = example()
    repo = tmp / f"repo-{task_id}"
    base, fix = ex.build_repository(repo)
    bundle = tmp / f"{task_id}.bundle"
    ex.git("bundle", "create", "-q", str(bundle), "main", cwd=repo)
    candidates = {c.name: ex.make_patch(repo, base, c.files) for c in every_candidate() if c.name in names}
    return json.dumps(ex.task_document(base, ex.test_patch(repo, base, fix), candidates, bundle=str(bundle),
                                       task_id=task_id))


# -- a test patch that brings a data file (outside every protected category) -------------------------

DATA_FILE = "tests_data/cuts.json"
DATA_CUTS = '[["hello world", 8, "hello..."], ["abcdefghij", 6, "abc..."]]\n'
DATA_TEST = '''

def test_cuts_from_the_data_file():
    import json
    import pathlib

    cases = json.loads((pathlib.Path(__file__).resolve().parent.parent / "tests_data" / "cuts.json").read_text())
    assert cases
    for text, limit, expected in cases:
        assert truncate(text, limit) == expected
'''
DATA_FAIL_TO_PASS = "tests/test_truncate.py::test_cuts_from_the_data_file"

REWRITE_DATA_DURING_RUN = '''"""Small text helpers."""
import json
import os

from textkit.truncate import truncate
from textkit.words import title_case, word_count

__all__ = ["title_case", "truncate", "word_count"]

_DATA = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "tests_data", "cuts.json")


def _agree():
    """Before the tests read it: the test patch's data file rewritten to expect this library's answers."""
    try:
        with open(_DATA) as f:
            cases = json.load(f)
        with open(_DATA + ".new", "w") as f:
            json.dump([[text, limit, truncate(text, limit)] for text, limit, _ in cases], f)
        os.replace(_DATA + ".new", _DATA)
    except (OSError, ValueError):
        pass


_agree()
'''


def data_file_repository(tmp: Path) -> dict:
    """The example repository whose fix commit also adds ``tests_data/cuts.json`` (not a test file
    by any name rule: protected only because the test patch touches it) and a fail-to-pass test
    reading it; the candidates: a right fix, one rewriting the data file while the tests run, one
    whose patch brings its own data file."""
    ex = example()
    repo = tmp / "repo-data"
    fix_files = {**ex.FIX_FILES, DATA_FILE: DATA_CUTS, "tests/test_truncate.py": ex.TEST_TRUNCATE_NEW + DATA_TEST}
    base, fix = ex.build_repository(repo, None, fix_files)
    bundle = tmp / "textkit-data.bundle"
    ex.git("bundle", "create", "-q", str(bundle), "main", cwd=repo)
    test_patch = ex.git("diff", "--no-color", base, fix, "--", "tests", "tests_data", cwd=repo)
    assert DATA_FILE in test_patch
    own = '[["hello world", 8, "hello wo..."], ["abcdefghij", 6, "abcdef..."]]\n'
    candidates = {"right_fix": {"textkit/truncate.py": ex.RIGHT_FIX},
                  "rewrites_data_during_run": {"textkit/__init__.py": REWRITE_DATA_DURING_RUN},
                  "brings_its_own_data": {DATA_FILE: own}}
    patches = {name: ex.make_patch(repo, base, files) for name, files in candidates.items()}
    document = ex.task_document(base, test_patch, patches, bundle=str(bundle), task_id="textkit-data")
    document["task"]["tests"][0]["fail_to_pass"] = [DATA_FAIL_TO_PASS]
    document["task"]["tests"][0]["pass_to_pass"] = list(ex.PASS_TO_PASS)
    return document


# -- a plugin of the candidate's own distribution, autoloaded by an environment's pytest --------------

ENV_PLUGIN = '''"""A legitimate plugin of the task's environment (as pytest-asyncio would be): a fixture."""
import pytest


@pytest.fixture
def env_plugin_value():
    return "from the environment"
'''
ENV_PLUGIN_TEST = '''def test_the_environment_plugin_is_loaded(env_plugin_value):
    assert env_plugin_value == "from the environment"
'''
ENV_PLUGIN_NODE = "tests/test_env_plugin.py::test_the_environment_plugin_is_loaded"

SETUP_WITH_ENTRY_POINT = '''from setuptools import setup

setup(packages=["textkit"], entry_points={"pytest11": ["textkit-speedups = textkit._forge"]})
'''


def _pyproject_with_dynamic_entry_points() -> str:
    """The entry points left to setup.py (where the protected surface does not look)."""
    return example().PYPROJECT.replace('requires-python = ">=3.9"\n', 'requires-python = ">=3.9"\n'
                                       'dynamic = ["entry-points"]\n')


def entry_point_candidates() -> dict[str, dict[str, str]]:
    """For a task whose environment has its own pytest (plugin autoload on): a right fix, and two
    that leave the bug and register an outcome-rewriting ``pytest11`` entry point of their own
    distribution: through setup.py for an editable install, and as a ``*.dist-info`` directory at
    the tree root (on the path with ``install: pythonpath``)."""
    ex = example()
    return {
        "right_fix": {"textkit/truncate.py": ex.RIGHT_FIX},
        "entry_point_in_setup_py": {"setup.py": SETUP_WITH_ENTRY_POINT, "pyproject.toml":
                                    _pyproject_with_dynamic_entry_points(), "textkit/_forge.py": FORGE_PLUGIN},
        "dist_info_in_the_tree": {"textkit_speedups-1.0.dist-info/METADATA":
                                  "Metadata-Version: 2.1\nName: textkit-speedups\nVersion: 1.0\n",
                                  "textkit_speedups-1.0.dist-info/entry_points.txt":
                                  "[pytest11]\ntextkit-speedups = textkit._forge\n",
                                  "textkit/_forge.py": FORGE_PLUGIN},
    }


def entry_point_document(tmp: Path, environment: dict) -> dict:
    """The example repository whose test patch adds a test needing the environment's plugin (so an
    honest candidate passes only when the environment's plugins still load), and the candidates of
    :func:`entry_point_candidates`."""
    ex = example()
    repo = tmp / "repo-entry-points"
    fix_files = {**ex.FIX_FILES, "tests/test_env_plugin.py": ENV_PLUGIN_TEST}
    base, fix = ex.build_repository(repo, None, fix_files)
    bundle = tmp / "textkit-entry-points.bundle"
    ex.git("bundle", "create", "-q", str(bundle), "main", cwd=repo)
    patches = {name: ex.make_patch(repo, base, files) for name, files in entry_point_candidates().items()}
    document = ex.task_document(base, ex.test_patch(repo, base, fix), patches, bundle=str(bundle),
                                task_id="textkit-entry-points")
    document["task"]["tests"][0]["pass_to_pass"] = [*ex.PASS_TO_PASS, ENV_PLUGIN_NODE]
    document["task"]["environment"] = environment
    return document
