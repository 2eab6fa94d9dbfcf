"""Cue words and a tiny stemmer for the prompt-language signals.

The lists are generic vocabulary of "checkable" versus "judged" work, written from the meaning of
the words, not fitted to any data set. Stemming folds inflections (computes, computed -> comput)
so the lists stay short.
"""

from __future__ import annotations

import re

WORD = re.compile(r"[a-z]+")
_SUFFIXES = ("ations", "ation", "ingly", "ings", "ing", "edly", "ness", "ment", "ies", "ied",
             "ers", "er", "ed", "ly", "es", "s", "e")


def stem(word: str) -> str:
    """Strip one common English suffix, keeping at least three letters."""
    for suffix in _SUFFIXES:
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            return word[: -len(suffix)]
    return word


def stems(text: str) -> list[str]:
    return [stem(w) for w in WORD.findall(text.lower())]


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
_CUE_CLASS: dict[str, int] = {}
_CUE_CACHE_MAX = 50_000


def cue_counts(lower: str) -> tuple[int, int, int]:
    """(words, verifiable cue words, judgment cue words) in lower-case text.

    Words are split in C (translate + split); each distinct word is stemmed once and its class
    memoized, so a long prompt costs a dictionary lookup per word.
    """
    words = lower.translate(_NON_LETTERS).split()
    classes = _CUE_CLASS
    if len(classes) > _CUE_CACHE_MAX:
        classes.clear()
    verifiable = judgment = 0
    for w in words:
        c = classes.get(w)
        if c is None:
            st = stem(w)
            c = classes[w] = 1 if st in VERIFIABLE_CUES else 2 if st in JUDGMENT_CUES else 0
        if c == 1:
            verifiable += 1
        elif c == 2:
            judgment += 1
    return len(words), verifiable, judgment


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
FENCE = re.compile(r"```")
CODE_LINE = re.compile(r"(?:^|\n)[ \t]*(?:def |class |import |from \w+ import |return\b|function |const |let |#include)")
CODE_HINTS = ("def ", "class ", "import ", "return", "function ", "const ", "let ", "#include")
