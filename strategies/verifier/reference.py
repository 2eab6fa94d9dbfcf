"""Check an answer that is not code against ``task.reference``, the way ``task.reference_check`` says.

First the part of the reply to compare is taken (``final_answer``: ``answer_pattern``, or
``extract: final``, else the whole reply); then the mode compares it. Modes (default
``contains``): ``contains`` needs the reference's words, whole, in the answer with no negation or
alternatives cue outside them (``contains``); ``exact`` compares the stripped strings;
``normalized`` ignores case, runs of whitespace and the punctuation that carries no value (see
``normalize_text``); ``numeric`` reads the first (or, with ``number: last``, the last) number of
the answer and the first of the reference (see ``read_number``) and compares with
``rel_tol``/``abs_tol``; ``regex`` needs the reference pattern to match the whole stripped answer;
``set`` splits both on ``separator`` and compares the normalized items as sets.

No mode may make two answers with different values equal: a sign, an operator, a digit or a
decimal point always counts, and a number that cannot be read without guessing is refused with
the reason rather than read as some other number. Every verdict's message says what was compared.
"""

from __future__ import annotations

import math
import re
import unicodedata
from dataclasses import dataclass
from typing import Any

from oracle.strategies.verifier import contains
from oracle.strategies.verifier.answer_text import (DECIMAL_MARKS, VALUELESS_MARKS, is_valueless_mark,
                                                    normalize_text, words)
from oracle.strategies.verifier.answer_text import _is_digit
from oracle.strategies.verifier.final_answer import Extracted, extract_answer
from oracle.strategies.verifier.safe_regex import REGEX_TIMEOUT_S, regex_fullmatch
from oracle.tasks.testspec import ReferenceCheck

__all__ = ["DECIMAL_MARKS", "MINUS_SIGNS", "PLUS_SIGNS", "REGEX_TIMEOUT_S", "VALUELESS_MARKS", "NumberReading",
           "ReferenceVerdict", "check_answer", "first_number", "is_valueless_mark", "normalize_text",
           "read_number", "regex_fullmatch", "validate_reference"]


@dataclass(frozen=True)
class ReferenceVerdict:
    passed: bool
    message: str


MINUS_SIGNS = frozenset("-\u2212\u2012\u2013\u2010\u2011\ufe63\uff0d\u2796\u02d7")
"""Read as a minus sign directly before a number: hyphen-minus, MINUS SIGN, figure dash, en dash,
hyphen, non-breaking hyphen, small and fullwidth hyphen-minus, heavy and modifier minus."""
PLUS_SIGNS = frozenset("+\uff0b\ufe62\u2795")
MAX_NUMBER_CHARS = 400
"""A longer number is refused: float has ~17 significant digits, and reading a million digits is
work no answer needs (Python also refuses int strings past 4,300 digits)."""

RUN_ON = frozenset(".,．，٫٬+*/^×÷·⋅∗∕⁄:") | MINUS_SIGNS | PLUS_SIGNS
"""Directly after a number and before a digit, these make it part of something larger (``1.2.3``,
``1/2``, ``2+3``, ``10^3``, ``3:4``): that number is refused, not read as its first part."""

_NUMBER = re.compile(r"(\d[\d,]*(?:\.\d*)?|\.\d+)(?:[eE]([^\w\s]?)(\d+))?")


@dataclass(frozen=True)
class NumberReading:
    """The first number of a text, or why it cannot be read (``value`` None, ``problem`` set);
    both None when the text holds no digit at all."""

    value: float | None = None
    problem: str | None = None


def _sign_before(text: str, at: int) -> tuple[float, str | None]:
    """The sign written directly before position ``at``: (+1 or -1, problem or None)."""
    if at == 0:
        return 1.0, None
    ch = text[at - 1]
    before = text[at - 2] if at >= 2 else ""
    signed = ch in MINUS_SIGNS or ch in PLUS_SIGNS
    if signed and (before in MINUS_SIGNS or before in PLUS_SIGNS or unicodedata.category(before or "a") == "Pd"):
        return 1.0, f"stacked signs {before + ch!r} before the number"
    if ch in MINUS_SIGNS:
        return -1.0, None
    if ch in PLUS_SIGNS:
        return 1.0, None
    if unicodedata.category(ch) == "Pd" or "MINUS" in unicodedata.name(ch, "") or "PLUS" in unicodedata.name(ch, ""):
        return 1.0, f"{ch!r} (U+{ord(ch):04X}) before the number is not read as a sign"
    return 1.0, None


def _runs_on(mantissa: str, follow: str) -> bool:
    """Whether what directly follows a number makes it part of a larger one (see ``RUN_ON``)."""
    first = follow[0]
    if _is_digit(first) or any(w in unicodedata.name(first, "") for w in ("SUPERSCRIPT", "SUBSCRIPT")):
        return True  # 10², 1½, 10⁻³
    if mantissa == "0" and first in "xXbBoO" and len(follow) > 1 and follow[1].isalnum():
        return True  # 0x1F
    rest = follow[1:].lstrip("".join(RUN_ON))
    return first in RUN_ON and bool(rest) and _is_digit(rest[0])


def _ascii_digits(token: str) -> tuple[str, str | None]:
    """The token with its digits as ASCII; a problem when they come from more than one script."""
    zeros = {ord(ch) - unicodedata.decimal(ch) for ch in token if ch.isdecimal()}
    if len(zeros) > 1:
        return "", "its digits mix scripts"
    return "".join(str(unicodedata.decimal(ch)) if ch.isdecimal() else ch for ch in token), None


def read_number(text: str, which: str = "first") -> NumberReading:
    """The first (or last) number in ``text``, read without guessing.

    Understood: digits of any one script (``unicodedata``: ASCII, fullwidth, Arabic-Indic,
    Devanagari...), a ``MINUS_SIGNS``/``PLUS_SIGNS`` character directly before, ``.`` as the
    decimal point, ``,`` between groups of exactly three digits, an ASCII exponent. Refused, with
    the reason: other dashes and minus-like signs directly before (em dash, horizontal bar,
    superscript minus...), stacked signs, digits mixing scripts, a comma that does not group
    thousands (``1,5``), a number run on by a separator and a digit (``1.2.3``) or by a digit of
    another kind (``10²``, ``1½``), more than ``MAX_NUMBER_CHARS`` characters, and values past the
    float range. A refused first number is not skipped for a later one.

    ``which="last"`` reads the last number instead ("In 2023 we sold 42" -> 42), by the same rules:
    a refused last number is not replaced by an earlier one.
    """
    if which == "last":
        last = None
        for last in _NUMBER.finditer(text):
            pass
        return NumberReading() if last is None else _read_match(text, last)
    for m in _NUMBER.finditer(text):
        return _read_match(text, m)
    return NumberReading()


def _read_match(text: str, m: re.Match[str]) -> NumberReading:
    """The number ``_NUMBER`` matched at ``m``, or why it cannot be read (see ``read_number``)."""
    begin, end = m.span()
    if end - begin > MAX_NUMBER_CHARS:
        return NumberReading(problem=f"a number of {end - begin} characters (at most {MAX_NUMBER_CHARS} are read)")
    sign, problem = _sign_before(text, begin)
    mantissa = m.group(1).rstrip(",")
    end = begin + len(mantissa) + (len(m.group(0)) - len(m.group(1)) if m.group(3) else 0)
    if problem is None and begin > 0 and _is_digit(text[begin - 1]):
        problem = f"{text[begin - 1]!r} runs into the number"
    follow = text[end:end + 3]
    if problem is None and follow and _runs_on(mantissa, follow):
        problem = f"the number runs on into {follow!r}"
    groups = mantissa.split(".")[0].split(",")
    if problem is None and len(groups) > 1 and not (
            1 <= len(groups[0]) <= 3 and all(len(g) == 3 for g in groups[1:])):
        problem = f"the comma in {mantissa!r} does not separate thousands"
    exponent = ""
    if m.group(3):
        mark = m.group(2)
        if mark and mark not in MINUS_SIGNS and mark not in PLUS_SIGNS:
            problem = problem or f"{mark!r} in the exponent is not read as a sign"
        exponent = "e" + ("-" if mark in MINUS_SIGNS and mark else "") + m.group(3)
    digits, mixed = _ascii_digits(mantissa.replace(",", "") + exponent)
    problem = problem or mixed
    if problem is not None:
        return NumberReading(problem=f"cannot read the number {text[max(0, begin - 1):end][:40]!r}: {problem}")
    value = sign * float(digits)
    if not math.isfinite(value):
        return NumberReading(problem=f"the number {text[begin:end][:40]!r} is outside the float range")
    return NumberReading(value=value)


def first_number(text: str) -> float | None:
    """The first number of ``text``; None when there is none or it is refused (``read_number``)."""
    return read_number(text).value


def validate_reference(reference: str, check: ReferenceCheck) -> str | None:
    """An error message naming the field when the reference cannot work with its mode, else None."""
    if check.mode == "regex":
        try:
            re.compile(reference)
        except re.error as exc:
            return f"task.reference: invalid regular expression for reference_check.mode=regex: {exc}"
    if check.mode == "numeric":
        reading = read_number(reference)
        if reading.value is None:
            return ("task.reference: " + (reading.problem or "no number in the reference")
                    + " (reference_check.mode=numeric)")
    return None


def _shown(text: str, limit: int = 80) -> str:
    return repr(text[:limit] + ("..." if len(text) > limit else ""))


def _contains(answer: str, reference: str) -> ReferenceVerdict:
    want = words(reference)
    r = " ".join(w.core for w in want)
    if not want:  # nothing but valueless marks: only an answer that is nothing else matches
        ok = normalize_text(answer) == ""
        return ReferenceVerdict(ok, "the reference is empty after normalization: "
                                    + ("so is the answer" if ok else f"got {_shown(normalize_text(answer))}"))
    found = contains.find(words(answer), [w.core for w in want],
                          numeric_reference=any(_is_digit(ch) for ch in r))
    if found.passed:
        return ReferenceVerdict(True, f"expected {_shown(r)} (contains), found at {found.at}")
    if found.at is None:
        return ReferenceVerdict(False, f"expected {_shown(r)} (contains), not in {_shown(normalize_text(answer))}")
    if found.cue_kind == "sign":
        return ReferenceVerdict(False, f"expected {_shown(r)} (contains), found at {found.at}, but with "
                                       f"the sign {found.cue!r} before it")
    why = {"negation": "a negation may apply", "alternatives": "it may list alternatives",
           "bound": "the number may be a bound"}[found.cue_kind or ""]
    return ReferenceVerdict(False, f"expected {_shown(r)} (contains) at {found.at}, but the answer "
                                   f"also says {found.cue!r}: {why}; use answer_pattern or mode normalized")


def _compare(answer: str, reference: str, check: ReferenceCheck) -> ReferenceVerdict:
    """The mode's verdict on the (extracted) answer."""
    a: Any  # the answer and the reference as each mode reads them (text, number or item set)
    r: Any
    mode = check.mode
    if mode == "contains":
        return _contains(answer, reference)
    if mode == "exact":
        a, r = answer.strip(), reference.strip()
        return ReferenceVerdict(a == r, f"expected {_shown(r)} (exact), got {_shown(a)}")
    if mode == "normalized":
        a, r = normalize_text(answer), normalize_text(reference)
        return ReferenceVerdict(a == r, f"expected {_shown(r)} (normalized), got {_shown(a)}")
    if mode == "numeric":
        got, want = read_number(answer, check.number), read_number(reference)
        if got.value is None:
            return ReferenceVerdict(False, got.problem or f"no number in the answer {_shown(answer.strip(), 60)}")
        if want.value is None:
            return ReferenceVerdict(False, f"the reference: {want.problem or 'no number'}")
        a, r = got.value, want.value
        ok = math.isclose(a, r, rel_tol=check.rel_tol, abs_tol=check.abs_tol)
        which = "last number " if check.number == "last" else ""
        return ReferenceVerdict(ok, f"{which}{a:g} {'within' if ok else 'outside'} tolerance of {r:g} "
                                    f"(rel {check.rel_tol:g}, abs {check.abs_tol:g})")
    if mode == "regex":
        matched = regex_fullmatch(reference, answer.strip())
        if matched is None:
            return ReferenceVerdict(False, f"matching /{reference[:80]}/ took longer than {REGEX_TIMEOUT_S:g} s "
                                           "(the pattern backtracks; it needs a construct RE2 lacks)")
        return ReferenceVerdict(matched, f"{_shown(answer.strip(), 60)} {'matches' if matched else 'does not match'} "
                                         f"/{reference[:80]}/")
    items = lambda s: {normalize_text(x) for x in s.split(check.separator)} - {""}  # noqa: E731
    a, r = items(answer), items(reference)
    if a == r:
        return ReferenceVerdict(True, f"same {len(r)} items: {sorted(r)[:10]}")
    return ReferenceVerdict(False, f"missing {sorted(r - a)[:10]}, unexpected {sorted(a - r)[:10]}")


def check_answer(answer: str, reference: str, check: ReferenceCheck) -> ReferenceVerdict:
    """Compare one answer with the reference: extract the part to compare, then apply the mode.

    When extraction finds nothing the answer fails with that reason; it is never compared whole
    instead. The message says what was compared, and where it came from when it was extracted."""
    extracted: Extracted = extract_answer(answer, check)
    if extracted.text is None:
        return ReferenceVerdict(False, extracted.problem or "no answer found")
    verdict = _compare(extracted.text, reference, check)
    if extracted.source == "whole":
        return verdict
    return ReferenceVerdict(verdict.passed, f"{extracted.describe()}; {verdict.message}")
