"""How much a run of the suite does: CI runs every Hypothesis example, a developer's run a fraction.

``CI=true`` (set by .ci/run) selects the Hypothesis profile ``ci``, which keeps the counts the tests
ask for; anything else selects ``dev`` (tests/conftest.py registers and loads both, and
``--hypothesis-profile=ci`` picks one by hand). A test that needs more or fewer examples than the
profile's default writes ``@settings(max_examples=examples(400))``: 400 under ``ci``, a tenth (at
least a handful) under ``dev``, so the fast loop stays fast without a second set of numbers.
"""

from __future__ import annotations

import os

from hypothesis import settings

CI_DEFAULT_EXAMPLES = 100
"""Hypothesis's own default, what every test without a count of its own ran before the profiles."""
DEV_DEFAULT_EXAMPLES = 20
DEV_FRACTION = 10
DEV_MIN_EXAMPLES = 5


def in_ci() -> bool:
    """Whether this run is CI's (``CI=true``): there a missing optional dependency fails, never skips."""
    return os.environ.get("CI", "").strip().lower() in ("true", "1", "yes")


def examples(n: int) -> int:
    """``n`` under the ``ci`` profile (or any profile but ``dev``); under ``dev`` a tenth, at least 5.

    Read when the test module is imported, so the profile must be loaded before collection (the
    conftest does it at import, Hypothesis's ``--hypothesis-profile`` option in pytest_configure).
    """
    if n < 1:
        raise ValueError(f"examples: n must be at least 1, got {n}")
    if settings.get_current_profile_name() != "dev":
        return n
    return min(n, max(DEV_MIN_EXAMPLES, n // DEV_FRACTION))
