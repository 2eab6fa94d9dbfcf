"""Shared pytest setup. Fixtures live in tests/plugins/, one module per concern."""

from __future__ import annotations

from pathlib import Path

from hypothesis import settings

from tests.profiles import CI_DEFAULT_EXAMPLES, DEV_DEFAULT_EXAMPLES, in_ci

ROOT = Path(__file__).resolve().parent.parent

# Hypothesis profiles (tests/profiles.py): `ci` keeps every test's example count, `dev` runs a
# fraction. Loaded here, before any test module is imported, because `examples(n)` reads it then.
settings.register_profile("ci", max_examples=CI_DEFAULT_EXAMPLES)
settings.register_profile("dev", max_examples=DEV_DEFAULT_EXAMPLES)
settings.load_profile("ci" if in_ci() else "dev")

# Every module in tests/plugins/ is a fixture plugin (scripted wire-protocol server, local model...).
pytest_plugins = [f"tests.plugins.{p.stem}" for p in sorted((ROOT / "tests" / "plugins").glob("*.py"))
                  if p.stem != "__init__"]
