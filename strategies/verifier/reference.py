"""Check an answer that is not code against ``task.reference``, the way ``task.reference_check`` says.

Modes (a field of the task, default ``normalized``): ``exact`` compares the stripped strings;
``normalized`` ignores case, punctuation and runs of whitespace; ``numeric`` takes the first number
of each side and compares with ``rel_tol``/``abs_tol``; ``regex`` needs the reference pattern to
match the whole stripped answer; ``set`` splits both on ``separator`` and compares the normalized
items as sets.
"""

from __future__ import annotations

import json
import math
import re
import subprocess
import sys
import unicodedata
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

try:
    import re2  # google-re2: linear-time matching
except ImportError:  # pragma: no cover - every pattern then takes the bounded child-process path
    re2 = None

from oracle.testspec import ReferenceCheck

_NUMBER = re.compile(r"[-+]?(?:\d{1,3}(?:,\d{3})+|\d+)?(?:\.\d+)?(?:[eE][-+]?\d+)?")


REGEX_TIMEOUT_S = 2.0
"""Wall-clock bound for a pattern RE2 cannot run (backreferences, lookaround)."""

_CHILD_MATCH = ("import json, re, sys\n"
                "pattern, text = json.load(sys.stdin)\n"
                "print(1 if re.fullmatch(pattern, text, re.DOTALL) else 0)\n")


@lru_cache(maxsize=256)
def _re2_pattern(pattern: str) -> Any | None:
    """The RE2 program for ``pattern``, or None when RE2 lacks a construct it uses."""
    if re2 is None:
        return None
    options = re2.Options()
    options.dot_nl = True  # as re.DOTALL
    options.log_errors = False
    try:
        return re2.compile(pattern, options)
    except re2.error:
        return None


def regex_fullmatch(pattern: str, text: str, *, timeout_s: float = REGEX_TIMEOUT_S) -> bool | None:
    """Whether ``pattern`` matches all of ``text``; None when the bounded fallback ran out of time."""
    program = _re2_pattern(pattern)
    if program is not None:
        return program.fullmatch(text) is not None
    try:
        done = subprocess.run([sys.executable, "-I", "-c", _CHILD_MATCH], input=json.dumps([pattern, text]),
                              capture_output=True, text=True, timeout=timeout_s, check=False)
    except subprocess.TimeoutExpired:
        return None
    return done.stdout.strip() == "1"


@dataclass(frozen=True)
class ReferenceVerdict:
    passed: bool
    message: str


def normalize_text(text: str) -> str:
    """Casefold, drop punctuation and symbols, collapse whitespace."""
    kept = "".join(" " if unicodedata.category(ch)[0] in "PS" else ch for ch in text.casefold())
    return " ".join(kept.split())


def first_number(text: str) -> float | None:
    for m in _NUMBER.finditer(text):
        token = m.group(0)
        if any(ch.isdigit() for ch in token):
            try:
                return float(token.replace(",", ""))
            except ValueError:
                continue
    return None


def validate_reference(reference: str, check: ReferenceCheck) -> str | None:
    """An error message naming the field when the reference cannot work with its mode, else None."""
    if check.mode == "regex":
        try:
            re.compile(reference)
        except re.error as exc:
            return f"task.reference: invalid regular expression for reference_check.mode=regex: {exc}"
    if check.mode == "numeric" and first_number(reference) is None:
        return "task.reference: no number in the reference (reference_check.mode=numeric)"
    return None


def check_answer(answer: str, reference: str, check: ReferenceCheck) -> ReferenceVerdict:
    """Compare one answer with the reference."""
    a: Any  # the answer and the reference as each mode reads them (text, number or item set)
    r: Any
    mode = check.mode
    if mode == "exact":
        ok = answer.strip() == reference.strip()
        return ReferenceVerdict(ok, "exact match" if ok else f"expected {reference.strip()[:80]!r}, "
                                                               f"got {answer.strip()[:80]!r}")
    if mode == "normalized":
        a, r = normalize_text(answer), normalize_text(reference)
        ok = a == r
        return ReferenceVerdict(ok, "matches after normalization" if ok
                                else f"expected {r[:80]!r} (normalized), got {a[:80]!r}")
    if mode == "numeric":
        a, r = first_number(answer), first_number(reference)
        if a is None:
            return ReferenceVerdict(False, "no number in the answer")
        assert r is not None
        ok = math.isclose(a, r, rel_tol=check.rel_tol, abs_tol=check.abs_tol)
        return ReferenceVerdict(ok, f"{a:g} {'within' if ok else 'outside'} tolerance of {r:g} "
                                    f"(rel {check.rel_tol:g}, abs {check.abs_tol:g})")
    if mode == "regex":
        matched = regex_fullmatch(reference, answer.strip())
        if matched is None:
            return ReferenceVerdict(False, f"matching /{reference[:80]}/ took longer than {REGEX_TIMEOUT_S:g} s "
                                           "(the pattern backtracks; it needs a construct RE2 lacks)")
        return ReferenceVerdict(matched, "pattern matches" if matched
                                else f"answer does not match /{reference[:80]}/")
    items = lambda s: {normalize_text(x) for x in s.split(check.separator)} - {""}  # noqa: E731
    a, r = items(answer), items(reference)
    if a == r:
        return ReferenceVerdict(True, f"same {len(r)} items")
    return ReferenceVerdict(False, f"missing {sorted(r - a)[:10]}, unexpected {sorted(a - r)[:10]}")
