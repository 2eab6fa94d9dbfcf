"""The Hypothesis profiles: CI (``CI=true``) runs the counts the tests ask for, a developer a tenth."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from tests.conftest import ROOT
from tests.profiles import examples

PROBE = """
import json
import tests.conftest
from hypothesis import settings
from tests.profiles import examples
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


def test_examples_refuses_a_count_below_one():
    with pytest.raises(ValueError, match="at least 1"):
        examples(0)
