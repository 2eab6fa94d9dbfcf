"""Cue words and a tiny stemmer for the prompt-language signals.

The lists are generic vocabulary of "checkable" versus "judged" work, written from the meaning of
the words, not fitted to any data set. Stemming folds inflections (computes, computed -> comput)
so the lists stay short.
"""

from __future__ import annotations

import re

_SUFFIXES = ("ations", "ation", "ingly", "ings", "ing", "edly", "ness", "ment", "ies", "ied",
             "ers", "er", "ed", "ly", "es", "s", "e")


def stem(word: str) -> str:
    """Strip one common English suffix, keeping at least three letters."""
    for suffix in _SUFFIXES:
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            return word[: -len(suffix)]
    return word


def _stemmed(words: str) -> frozenset[str]:
    return frozenset(stem(w) for w in words.split())


VERIFIABLE_CUES = _stemmed(
    "return returns compute calculate count sum test tests assert exact exactly equal equals "
    "output input integer integers float string strings list array function implement fix bug "
    "query queries sort sorted number numbers digit digits true false correct incorrect expected "
    "expect pass fails raise error index length maximum minimum solve solution algorithm prime"
)
JUDGMENT_CUES = _stemmed(
    "explain describe discuss opinion better best helpful clear clarity quality style tone "
    "creative persuasive essay story poem summarize summary rewrite improve suggest advice "
    "recommend polite friendly engaging compare argue argument reasoning justify brainstorm "
    "imagine write draft email letter feel think why review critique elegant readable"
)

_NON_LETTERS = str.maketrans({c: " " for c in map(chr, range(128)) if not c.isalpha()})
_ENDINGS = ("",) + _SUFFIXES
VERIFIABLE_FORMS = frozenset(stem_ + ending for stem_ in VERIFIABLE_CUES for ending in _ENDINGS)
JUDGMENT_FORMS = frozenset(stem_ + ending for stem_ in JUDGMENT_CUES for ending in _ENDINGS)
"""Every cue stem with each known ending: membership of a word is 'its stem is a cue'."""


def cue_counts(lower: str) -> tuple[int, int, int]:
    """(words, verifiable cue words, judgment cue words) in lower-case text.

    Words are split in C (translate + split) and counted against the precomputed inflected forms
    with C-level set lookups, so a 4 KB prefix costs a few microseconds.
    """
    words = lower.translate(_NON_LETTERS).split()
    return (len(words), sum(map(VERIFIABLE_FORMS.__contains__, words)),
            sum(map(JUDGMENT_FORMS.__contains__, words)))


GRADED_HINTS = ("scale", "rate ", "score ", "out of", "likert", "grade ", "point", "star")
RATIONALE_HINTS = ("explain", "justif", "rational", "reason", "why", "explanation", "show your")
GRADED_SCALE = re.compile(
    r"\b(?:on a scale|scale of|rate (?:it|this|the|each|from)|score (?:from|between|of|it|each)|"
    r"out of (?:5|10|ten|five|100)|\d+\s*(?:-|to)\s*\d+\s*(?:scale|points?|stars?)|likert|grade (?:it|the|each))"
)
RATIONALE = re.compile(
    r"\b(?:explain (?:why|your)|justify|rationale|give (?:your )?reasons?|reasoning behind|"
    r"why (?:is|does|did|would)|with an explanation|show your (?:work|reasoning))"
)
YES_NO_CHECK = re.compile(
    r"^(?:does|do|did|is|are|was|were|has|have|can|will|should)\b|\?\s*$|"
    r"^(?:must|should|the response (?:must|should|does|is|includes?|mentions?))\b|"
    r"\b(?:yes/no|yes or no|true/false)\b",
    re.IGNORECASE,
)
CODE_LINE = re.compile(r"(?:^|\n)[ \t]*(?:def |class |import |from \w+ import |return\b|function |const |let |#include)")
CODE_HINTS = ("def ", "class ", "import ", "return", "function ", "const ", "let ", "#include")
CODE_START = re.compile(r"(?:def |class |import |from \w+ import |return\b|function |const |let |#include)")
_CODE_FIRST = ("def ", "class ", "import ", "from ", "return", "function ", "const ", "let ", "#include")


def has_code_line(text: str) -> bool:
    """Whether some line starts (after indentation) like code; same answer as ``CODE_LINE.search``.

    Checked line by line with a C-level ``startswith`` on a tuple; the regex runs only on the few
    lines that pass it.
    """
    for line in text.split("\n"):
        stripped = line.lstrip(" \t")
        if stripped.startswith(_CODE_FIRST) and CODE_START.match(stripped) is not None:
            return True
    return False


GRADED_AT = re.compile(
    r"(?:on a scale|scale of|rate (?:it|this|the|each|from)|score (?:from|between|of|it|each)|"
    r"out of (?:5|10|ten|five|100)|likert|grade (?:it|the|each))"
)
GRADED_STARTS = ("on a scale", "scale of", "rate ", "score ", "out of ", "likert", "grade ")
GRADED_RANGE = re.compile(r"\b\d+\s*(?:-|to)\s*\d+\s*(?:scale|points?|stars?)")
GRADED_RANGE_HINTS = ("scale", "point", "star")
RATIONALE_AT = re.compile(
    r"(?:explain (?:why|your)|justify|rationale|give (?:your )?reasons?|reasoning behind|"
    r"why (?:is|does|did|would)|with an explanation|show your (?:work|reasoning))"
)
RATIONALE_STARTS = ("explain ", "justify", "rationale", "give ", "reasoning behind", "why ",
                    "with an explanation", "show your ")


def match_at_word_starts(pattern: re.Pattern[str], text: str, starts: tuple[str, ...]) -> bool:
    """Whether ``pattern`` matches at a word boundary where one of ``starts`` begins.

    Each alternative of the pattern begins with one of the start strings, so anchoring at their
    occurrences finds exactly what ``\\b(?:pattern)`` scanning the text would, without scanning.
    """
    for start in starts:
        i = text.find(start)
        while i != -1:
            if (i == 0 or not (text[i - 1].isalnum() or text[i - 1] == "_")) \
                    and pattern.match(text, i) is not None:
                return True
            i = text.find(start, i + 1)
    return False


def asks_graded_scale(text: str) -> bool:
    """Same answer as ``GRADED_SCALE.search(text)``, in a few microseconds."""
    return match_at_word_starts(GRADED_AT, text, GRADED_STARTS) or (
        any(h in text for h in GRADED_RANGE_HINTS)
        and search_near(GRADED_RANGE, text, GRADED_RANGE_HINTS, before=48, after=8))


def asks_rationale(text: str) -> bool:
    """Same answer as ``RATIONALE.search(text)``."""
    return match_at_word_starts(RATIONALE_AT, text, RATIONALE_STARTS)


def search_near(pattern: re.Pattern[str], text: str, hints: tuple[str, ...], *,
                before: int = 64, after: int = 64) -> bool:
    """``pattern.search(text)``, run only in windows around occurrences of its hint words.

    Every match of these patterns contains one of its hints, so searching the windows finds what a
    full scan would; a backtracking scan over a whole prefix costs tens of microseconds, the
    windows cost one or two.
    """
    for hint in hints:
        i = text.find(hint)
        while i != -1:
            if pattern.search(text, max(0, i - before), i + len(hint) + after) is not None:
                return True
            i = text.find(hint, i + 1)
    return False
