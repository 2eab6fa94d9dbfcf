"""Answer text as the reference checks read it: case folded, split into words, valueless marks
dropped at word edges, every sign, operator, digit and decimal point kept (``normalize_text``).

Its own module because ``normalized``, ``set`` and ``contains`` all read words this way, and
``contains`` also needs to know where each word lies in the original answer (``words``).
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass

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


def core_span(word: str) -> tuple[int, int]:
    """Where the core of a word lies: the word without the valueless marks at its edges (the two
    exceptions kept). Linear in the word (whether it holds a digit is asked once: trimming removes
    marks only, never a digit)."""
    start, end = 0, len(word)
    while start < end and is_valueless_mark(word[start]) and not (
            word[start] in DECIMAL_MARKS and start + 1 < end and _is_digit(word[start + 1])):
        start += 1
    has_digit: bool | None = None
    while end > start and is_valueless_mark(word[end - 1]):
        if word[end - 1] in "!！":
            if has_digit is None:
                has_digit = any(_is_digit(ch) for ch in word[start:end])
            if has_digit:
                break
        end -= 1
    return start, end


def _core(word: str) -> str:
    start, end = core_span(word)
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


_WORD = re.compile(r"\S+")
"""A run of non-whitespace: ``\\s`` in a str pattern is ``str.isspace``, what ``str.split`` splits at."""


@dataclass(frozen=True, slots=True)
class Word:
    """A word's core as ``normalize_text`` reads it, and where that core starts in the original text."""

    core: str
    at: int


def words(text: str) -> list[Word]:
    """The words of ``text`` exactly as ``normalize_text`` reads them, each with its offset.

    Split at whitespace as ``str.split`` does; each word is case folded, then cut
    to its core. The marks dropped at a word's start are marks, which case folding leaves as they
    are, so the core's offset in ``text`` is the word's plus the marks dropped before it.
    ``" ".join(w.core for w in words(t)) == normalize_text(t)`` for every text."""
    out: list[Word] = []
    for m in _WORD.finditer(text):
        folded = m.group().casefold()
        start, end = core_span(folded)
        if end > start:
            out.append(Word(folded[start:end], m.start() + start))
    return out
