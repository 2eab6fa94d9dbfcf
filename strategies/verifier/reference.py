"""Check an answer that is not code against ``task.reference``, the way ``task.reference_check`` says.

Modes (a field of the task, default ``normalized``): ``exact`` compares the stripped strings;
``normalized`` ignores case, runs of whitespace and the punctuation that carries no value (see
``normalize_text``); ``numeric`` reads the first number of each side (see ``read_number``) and
compares with ``rel_tol``/``abs_tol``; ``regex`` needs the reference pattern to match the whole
stripped answer; ``set`` splits both on ``separator`` and compares the normalized items as sets.

No mode may make two answers with different values equal: a sign, an operator, a digit or a
decimal point always counts, and a number that cannot be read without guessing is refused with
the reason rather than read as some other number.
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

from oracle.tasks.testspec import ReferenceCheck

REGEX_TIMEOUT_S = 2.0
"""Wall-clock bound for a pattern RE2 cannot run (backreferences, lookaround)."""

_CHILD_MATCH = ("import json, re, sys\n"
                "pattern, text = json.load(sys.stdin)\n"
                "print(1 if re.fullmatch(pattern, text, re.DOTALL | re.ASCII) else 0)\n")
"""re.ASCII: ``\\d``, ``\\w``, ``\\s`` and ``\\b`` mean what they mean in RE2 (ASCII), on both paths."""


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
    except (re2.error, UnicodeError):  # a lone surrogate has no UTF-8 form: the fallback takes it
        return None


def regex_fullmatch(pattern: str, text: str, *, timeout_s: float = REGEX_TIMEOUT_S) -> bool | None:
    """Whether ``pattern`` matches all of ``text``; None when the bounded fallback ran out of time."""
    program = _re2_pattern(pattern)
    if program is not None and _utf8(text):
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


def _utf8(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


VALUELESS_MARKS = frozenset(".,;:!?\"'¡¿…‥。、，．：；！？＂＇‼⁇⁈⁉؟،؛۔")
"""Sentence and phrase punctuation and straight quotes; with every bracket and quotation mark
(Unicode categories Ps, Pe, Pi, Pf), what ``normalize_text`` may drop. Every other character
(letters, digits, signs, operators, %, /, currency, degree...) is kept."""
_BRACKETS_AND_QUOTES = ("Ps", "Pe", "Pi", "Pf")


def is_valueless_mark(ch: str) -> bool:
    return ch in VALUELESS_MARKS or unicodedata.category(ch) in _BRACKETS_AND_QUOTES


DECIMAL_MARKS = frozenset(".,．，٫٬")
"""Kept before a digit at the start of a word: ``.5`` is not ``5``."""


def _is_digit(ch: str) -> bool:
    return unicodedata.category(ch)[0] == "N"


def _core(word: str) -> str:
    """A word without the valueless marks at its edges (the two exceptions kept)."""
    start, end = 0, len(word)
    while start < end and is_valueless_mark(word[start]) and not (
            word[start] in DECIMAL_MARKS and start + 1 < end and _is_digit(word[start + 1])):
        start += 1
    while end > start and is_valueless_mark(word[end - 1]) and not (
            word[end - 1] in "!！" and any(_is_digit(ch) for ch in word[start:end])):
        end -= 1
    return word[start:end]


def normalize_text(text: str) -> str:
    """The text as ``normalized`` compares it: case folded, whitespace collapsed, valueless marks dropped.

    Precisely: the text is case folded (``str.casefold``, Unicode full case folding) and split into
    words at runs of whitespace (``str.split``). Each word loses the valueless marks (``is_valueless_mark``) at its two
    edges, except a decimal mark directly before a digit at its start (``.5``) and a ``!`` at its
    end when the word holds a digit (``5!`` may be a factorial). Words left empty are dropped and
    the rest joined with one space. A mark inside a word (``3.5``, ``1,000``, ``it's``, ``f(x)``) is
    kept, and so is every character that is not a valueless mark: signs, operators and digits of
    every form, as written (no width or script folding: ``５`` is not ``5`` here).

    So two texts normalize alike only when they differ in case, in whitespace, and in valueless
    marks at the edges of their words: never in a sign, an operator, a digit or a decimal point
    (``-5`` is not ``5``, ``2+3`` is not ``2 3``, ``3.5`` is not ``3 5``).
    """
    return " ".join(core for core in map(_core, text.casefold().split()) if core)


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


def read_number(text: str) -> NumberReading:
    """The first number in ``text``, read without guessing.

    Understood: digits of any one script (``unicodedata``: ASCII, fullwidth, Arabic-Indic,
    Devanagari...), a ``MINUS_SIGNS``/``PLUS_SIGNS`` character directly before, ``.`` as the
    decimal point, ``,`` between groups of exactly three digits, an ASCII exponent. Refused, with
    the reason: other dashes and minus-like signs directly before (em dash, horizontal bar,
    superscript minus...), stacked signs, digits mixing scripts, a comma that does not group
    thousands (``1,5``), a number run on by a separator and a digit (``1.2.3``) or by a digit of
    another kind (``10²``, ``1½``), more than ``MAX_NUMBER_CHARS`` characters, and values past the
    float range. A refused first number is not skipped for a later one.
    """
    for m in _NUMBER.finditer(text):
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
    return NumberReading()


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
        got, want = read_number(answer), read_number(reference)
        if got.value is None:
            return ReferenceVerdict(False, got.problem or "no number in the answer")
        if want.value is None:
            return ReferenceVerdict(False, f"the reference: {want.problem or 'no number'}")
        a, r = got.value, want.value
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
