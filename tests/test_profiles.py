"""The Hypothesis profiles: CI (``CI=true``) runs the counts the tests ask for, a developer a tenth."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from tests.conftest import ROOT
from tests.profiles import deselects_whole_module, examples, module_marks

PROBE = """
import json
import tests.conftest
from hypothesis import settings
from tests.profiles import deselects_whole_module, examples, module_marks
import tests.test_fuzz_task_loading as fuzz
fuzzed = fuzz.test_loading_and_routing_never_raise_anything_but_task_validation_error
print(json.dumps([settings.get_current_profile_name(), settings.default.max_examples, examples(400), examples(20),
                  fuzzed._hypothesis_internal_use_settings.max_examples]))
"""


@pytest.mark.parametrize("ci, want", [("true", ["ci", 100, 400, 20, 2500]), ("", ["dev", 20, 40, 5, 250]),
                                      ("false", ["dev", 20, 40, 5, 250])])
def test_the_ci_variable_chooses_the_profile_and_the_counts_follow_it(ci, want):
    env = {**os.environ, "CI": ci}
    out = subprocess.run([sys.executable, "-c", PROBE], cwd=ROOT, env=env, capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr[-3000:]
    assert json.loads(out.stdout.splitlines()[-1]) == want


OPTION_PROBE = """
import sys, pytest
class Probe:
    def pytest_collection_finish(self, session):
        [item] = [i for i in session.items if i.name == "test_any_bytes_are_json_or_our_error"]
        print("@@MAX", item.function._hypothesis_internal_use_settings.max_examples)
pytest.main(["--collect-only", "-q", "-p", "no:cacheprovider", *sys.argv[1:], "tests/test_fuzz_task_loading.py"],
            plugins=[Probe()])
"""


@pytest.mark.slow
@pytest.mark.parametrize("option, want", [((), "@@MAX 50"), (("--hypothesis-profile=ci",), "@@MAX 500")])
def test_the_hypothesis_profile_option_chooses_the_counts_too(option, want):
    out = subprocess.run([sys.executable, "-c", OPTION_PROBE, *option], cwd=ROOT, env={**os.environ, "CI": ""},
                         capture_output=True, text=True, timeout=120)
    assert want in out.stdout.splitlines(), out.stdout[-2000:] + out.stderr[-2000:]


def test_examples_refuses_a_count_below_one():
    with pytest.raises(ValueError, match="at least 1"):
        examples(0)


@pytest.mark.parametrize("source, marks", [
    ("import pytest\npytestmark = pytest.mark.slow\n", {"slow"}),
    ("import pytest\npytestmark = [pytest.mark.sandbox, pytest.mark.slow]\n", {"sandbox", "slow"}),
    ("import pytest\npytestmark = pytest.mark.skipif(True, reason='x')\n", {"skipif"}),
    ("import pytest\n\n@pytest.mark.slow\ndef test_x():\n    pass\n", set()),
    ("def broken(:\n", set()),
])
def test_module_marks_are_read_without_importing(tmp_path, source, marks):
    path = tmp_path / "test_m.py"
    path.write_text(source + "raise SystemExit('imported')\n")
    assert module_marks(path) == marks


@pytest.mark.parametrize("markexpr, marks, deselected", [
    ("not slow and not local_model", {"slow"}, True),
    ("not slow and not local_model", {"sandbox"}, False),
    ("not slow", {"slow", "sandbox"}, True),
    ("slow", {"slow"}, False),
    ("sandbox or slow", {"slow"}, False),
    ("not (slow or ray)", {"ray"}, True),
    ("not sandbox", {"slow"}, False),        # the module's tests may not be sandbox tests
    ("sandbox", {"slow"}, False),            # ... or may be
    ("not slow", set(), False),
    ("", {"slow"}, False),
    ("not slow(reason='x')", {"slow"}, False),  # keyword arguments: not read, so never skipped
    ("not and slow", {"slow"}, False),
    ("(not slow", {"slow"}, False),
])
def test_a_module_is_left_out_only_when_every_test_of_it_is_deselected(markexpr, marks, deselected):
    assert deselects_whole_module(markexpr, frozenset(marks)) is deselected


def test_a_deselected_slow_module_is_not_even_imported(tmp_path):
    (tmp_path / "test_slow_mod.py").write_text("import pytest\npytestmark = pytest.mark.slow\n"
                                               "raise RuntimeError('imported')\n\ndef test_a():\n    pass\n")
    (tmp_path / "test_fast_mod.py").write_text("def test_b():\n    pass\n")
    (tmp_path / "conftest.py").write_text("from tests.conftest import pytest_ignore_collect  # noqa: F401\n")

    def run(*args: str) -> str:
        proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--rootdir",
                               str(tmp_path), *args, str(tmp_path)], cwd=ROOT, capture_output=True, text=True,
                              timeout=120, env={**os.environ, "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"})
        return proc.stdout + proc.stderr

    assert "1 passed" in (out := run("-m", "not slow")) and "imported" not in out, out
    assert "RuntimeError: imported" in run(), "without -m the slow module is collected (and fails to import)"
