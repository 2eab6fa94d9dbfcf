"""Shared pytest setup. Fixtures live in tests/plugins/, one module per concern."""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

# Every module in tests/plugins/ is a fixture plugin (scripted wire-protocol server, local model...).
pytest_plugins = [f"tests.plugins.{p.stem}" for p in sorted((ROOT / "tests" / "plugins").glob("*.py"))
                  if p.stem != "__init__"]
