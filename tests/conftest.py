"""Shared pytest setup. Fixtures live in tests/plugins/, one module per concern."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import settings

from tests.profiles import CI_DEFAULT_EXAMPLES, DEV_DEFAULT_EXAMPLES, deselects_whole_module, in_ci, module_marks

ROOT = Path(__file__).resolve().parent.parent

# Hypothesis profiles (tests/profiles.py): `ci` keeps every test's example count, `dev` runs a
# fraction. Loaded here, before any test module is imported, because `examples(n)` reads it then.
settings.register_profile("ci", max_examples=CI_DEFAULT_EXAMPLES)
settings.register_profile("dev", max_examples=DEV_DEFAULT_EXAMPLES)
settings.load_profile("ci" if in_ci() else "dev")

# Every module in tests/plugins/ is a fixture plugin (scripted wire-protocol server, local model...).
pytest_plugins = [f"tests.plugins.{p.stem}" for p in sorted((ROOT / "tests" / "plugins").glob("*.py"))
                  if p.stem != "__init__"]


def pytest_ignore_collect(collection_path: Path, config) -> bool | None:
    """A test module marked as a whole (``pytestmark``) with marks that ``-m`` deselects is not
    imported at all: the slow framework-adapter modules import their frameworks at collection."""
    markexpr = config.getoption("markexpr", default="")
    if not markexpr or collection_path.suffix != ".py" or not collection_path.name.startswith("test_"):
        return None
    return True if deselects_whole_module(markexpr, module_marks(collection_path)) else None


# Tests that share one expensive, session-wide thing run on one pytest-xdist worker
# (`--dist loadgroup`, set in pyproject.toml): the embedded model server starts once per worker
# that needs it and serves one request at a time, and a second Ray cluster beside the first only
# doubles the memory. The rest of the suite is spread over the workers as it comes.
_SHARED = ("local_model", "ray")
"""Each is a marker, a fixture, or both; it names the group too."""


@pytest.hookimpl(tryfirst=True)  # before xdist's own hook reads the groups into the node ids
def pytest_collection_modifyitems(config, items) -> None:
    for item in items:
        if item.get_closest_marker("xdist_group"):
            continue
        group = next((name for name in _SHARED
                      if item.get_closest_marker(name) or name in getattr(item, "fixturenames", ())), None)
        if group:
            item.add_marker(pytest.mark.xdist_group(group))
