"""Shared pytest setup. Fixtures live in tests/plugins/, one module per concern."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# Every module in tests/plugins/ is a fixture plugin (scripted wire-protocol server, local model...).
pytest_plugins = [f"tests.plugins.{p.stem}" for p in sorted((ROOT / "tests" / "plugins").glob("*.py"))
                  if p.stem != "__init__"]
