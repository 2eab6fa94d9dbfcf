"""How much a run of the suite does: CI runs every Hypothesis example, a developer's run a fraction.

And a module marked slow as a whole is not even imported when ``-m`` leaves slow tests out (the
conftest's ``pytest_ignore_collect``): the framework adapters' modules import deepeval, Inspect and
the like at collection, seconds of CPU per pytest worker for tests that would be deselected anyway.

``CI=true`` (set by .ci/run) selects the Hypothesis profile ``ci``, which keeps the counts the tests
ask for; anything else selects ``dev`` (tests/conftest.py registers and loads both, and
``--hypothesis-profile=ci`` picks one by hand). A test that needs more or fewer examples than the
profile's default writes ``@settings(max_examples=examples(400))``: 400 under ``ci``, a tenth (at
least a handful) under ``dev``, so the fast loop stays fast without a second set of numbers.
"""

from __future__ import annotations

import ast
import os
import re
from pathlib import Path

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


_MARK_WORDS = re.compile(r"\s*(?:(\()|(\))|([A-Za-z_][A-Za-z0-9_]*))")


def module_marks(path: Path) -> frozenset[str]:
    """The marker names a test module's top-level ``pytestmark = ...`` names, read without importing it.

    ``pytest.mark.slow`` and ``[pytest.mark.slow, pytest.mark.sandbox]`` (calls too:
    ``pytest.mark.skipif(...)``); a module that cannot be parsed has none (pytest reports it).
    """
    try:
        tree = ast.parse(path.read_bytes(), filename=str(path))
    except (OSError, SyntaxError, ValueError):
        return frozenset()
    names: set[str] = set()
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "pytestmark" for t in node.targets):
            values = node.value.elts if isinstance(node.value, (ast.List, ast.Tuple)) else [node.value]
            for value in values:
                value = value.func if isinstance(value, ast.Call) else value
                if (isinstance(value, ast.Attribute) and isinstance(value.value, ast.Attribute)
                        and value.value.attr == "mark"):
                    names.add(value.attr)
    return frozenset(names)


def deselects_whole_module(markexpr: str, marks: frozenset[str]) -> bool:
    """Whether ``-m markexpr`` deselects every test of a module marked ``marks`` as a whole, whatever
    other marks its tests carry (false for an expression this reader does not understand)."""
    words, pos = [], 0
    while markexpr[pos:].strip():
        m = _MARK_WORDS.match(markexpr, pos)
        if m is None:
            return False  # keyword arguments, strings...: not ours to read
        pos = m.end()
        words.append(m.group(1) or m.group(2) or m.group(3))
    if not marks or not words:
        return False
    try:  # a test's own marks could be anything: it is deselected only if it is both ways
        return not (_MarkExpr(words, marks, unknown=False).value() or _MarkExpr(words, marks, unknown=True).value())
    except ValueError:
        return False


class _MarkExpr:
    """``or`` of ``and`` of ``not``/parentheses/marker names, as pytest's ``-m`` reads them."""

    def __init__(self, words: list[str], marks: frozenset[str], unknown: bool) -> None:
        self.words, self.marks, self.unknown, self.at = words, marks, unknown, 0

    def value(self) -> bool:
        result = self._or()
        if self.at != len(self.words):
            raise ValueError("trailing words")
        return result

    def _next(self) -> str:
        if self.at >= len(self.words):
            raise ValueError("expression ends early")
        self.at += 1
        return self.words[self.at - 1]

    def _peek(self) -> str | None:
        return self.words[self.at] if self.at < len(self.words) else None

    def _or(self) -> bool:
        result = self._and()
        while self._peek() == "or":
            self._next()
            result = self._and() or result
        return result

    def _and(self) -> bool:
        result = self._not()
        while self._peek() == "and":
            self._next()
            result = self._not() and result
        return result

    def _not(self) -> bool:
        word = self._next()
        if word == "not":
            return not self._not()
        if word == "(":
            result = self._or()
            if self._next() != ")":
                raise ValueError("unclosed parenthesis")
            return result
        if word in ("and", "or", ")"):
            raise ValueError(f"unexpected {word!r}")
        return word in self.marks or self.unknown
