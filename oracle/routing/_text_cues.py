"""Cue words and a tiny stemmer for the prompt-language signals.

The lists are generic vocabulary of "checkable" versus "judged" work, written from the meaning of
the words, not fitted to any data set. Stemming folds inflections (computes, computed -> comput)
so the lists stay short.
"""

from __future__ import annotations

import re
from typing import Any

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

_ENDINGS = ("",) + _SUFFIXES
VERIFIABLE_FORMS = frozenset((stem_ + ending).encode() for stem_ in VERIFIABLE_CUES for ending in _ENDINGS)
JUDGMENT_FORMS = frozenset((stem_ + ending).encode() for stem_ in JUDGMENT_CUES for ending in _ENDINGS)
"""Every cue stem with each known ending, as bytes: membership of a word is 'its stem is a cue'."""
_CUE_FORMS = VERIFIABLE_FORMS | JUDGMENT_FORMS
_LETTERS_ONLY = bytes(c + 32 if 65 <= c <= 90 else c if 97 <= c <= 122 or c >= 128 else 32 for c in range(256))
"""Byte table: ASCII letters lower-cased, other ASCII bytes -> space, UTF-8 bytes of other characters kept."""


def cue_counts(text: str) -> tuple[int, int, int]:
    """(words, verifiable cue words, judgment cue words) in ``text``.

    A word is a run of letters (any character but ASCII non-letters and whitespace). The text is
    split as UTF-8 bytes through a 256-byte table, so the work is a few C passes and one set lookup
    per word (in both cue lists at once); text with non-ASCII characters first has its Unicode whitespace turned
    into spaces, which bytes.split would not see.
    """
    if not text.isascii():
        text = " ".join(text.split())
    words = text.encode().translate(_LETTERS_ONLY).split()
    # One set lookup per word (either list), then the few hits are sorted into the two lists.
    hits = list(filter(_CUE_FORMS.__contains__, words))
    if not hits:
        return len(words), 0, 0
    return (len(words), sum(map(VERIFIABLE_FORMS.__contains__, hits)),
            sum(map(JUDGMENT_FORMS.__contains__, hits)))


YES_NO_START = re.compile(
    r"(?:does|do|did|is|are|was|were|has|have|can|will|should|must|"
    r"the response (?:must|should|does|is|includes?|mentions?))\b",
    re.IGNORECASE,
)
YES_NO_WORDS = re.compile(r"\b(?:yes/no|yes or no|true/false)\b", re.IGNORECASE)
CODE_START = re.compile(r"(?:def |class |import |from \w+ import |return\b|function |const |let |#include)")
_CODE_FIRST_LINE = re.compile(r"[ \t]*" + CODE_START.pattern)
_CODE_LATER_LINE = re.compile(r"\n[ \t]*" + CODE_START.pattern)
"""A code-shaped first line, or a later one: the literal newline that opens the second pattern lets
the regex engine skip to each line start in C instead of trying every position."""


def is_yes_no_check(criterion: str, scan_chars: int) -> bool:
    """Whether a criterion reads as a yes/no check: it opens like a question or a requirement
    ("Does ...", "Must ...", "The response mentions ..."), ends with a question mark, or says
    yes/no or true/false. Reads the first and last ``scan_chars`` characters only.
    """
    head = criterion[:scan_chars].lstrip()
    if YES_NO_START.match(head) is not None or _says_yes_no(head):
        return True
    if len(criterion) <= scan_chars:
        return head.rstrip().endswith("?")
    tail = criterion[-scan_chars:].rstrip()
    return tail.endswith("?") or _says_yes_no(tail)


def _says_yes_no(text: str) -> bool:
    # Every phrase of YES_NO_WORDS has a "/" or an " or ": skip the regex scan when neither is there.
    return ("/" in text or " or " in text.lower()) and YES_NO_WORDS.search(text) is not None


def has_code_line(text: str, end: int | None = None) -> bool:
    """Whether some line of ``text[:end]`` starts (after spaces or tabs) like code: ``def``,
    ``class``, ``import``, ``from x import``, ``return``, ``function``, ``const``, ``let``,
    ``#include``. Lines are split on "\\n" only; ``text`` is read in place, not copied.
    """
    stop = len(text) if end is None else end
    return (_CODE_FIRST_LINE.match(text, 0, stop) is not None
            or _CODE_LATER_LINE.search(text, 0, stop) is not None)


CLAIM_CHECK_AT = re.compile(
    r"\b(?:(?:is|are) (?:th(?:is|e|ese) )?(?:claims?|statements?|assertions?) "
    r"(?:\w+ )?(?:supported|backed|true|correct|accurate|grounded|consistent)"
    r"|(?:verify|check|fact[- ]?check|validate|assess) (?:whether |if |that )?(?:th(?:is|e|ese) )?"
    r"(?:claims?|statements?|assertions?)"
    r"|fact[- ]?check"
    r"|(?:supported|contradicted|backed up|refuted) by the (?:evidence|context|passage|reference|source|document|text)"
    r"|does the (?:evidence|context|passage|reference|source|document|text) (?:support|contradict|back))"
)
CLAIM_HINTS = ("claim", "statement", "assertion", "fact", "support", "evidence", "contradict", "refute")


def asks_claim_check(text: str) -> bool:
    """Whether the (lower-case) text asks to verify a claim against evidence: "is this claim
    supported", "verify the statement", "fact-check", "supported by the context", "does the
    evidence support"... The regex runs only when one of a few hint words is present."""
    for hint in CLAIM_HINTS:
        if hint in text:
            return CLAIM_CHECK_AT.search(text) is not None
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
    """Whether the text asks for a rating: "on a scale", "rate it", "score from", "out of 10",
    "1-5 stars", "likert", "grade each"... (lower-case text)."""
    return match_at_word_starts(GRADED_AT, text, GRADED_STARTS) or _asks_graded_range(text)


def _asks_graded_range(text: str) -> bool:
    """"1-5 stars", "1 to 10 points", "0-100 scale": a number range right before a scale word.

    The regex runs only where a scale word follows a digit (spaces between), not at every
    occurrence of "point" or "star" (as in "pointer", "start").
    """
    for hint in GRADED_RANGE_HINTS:
        i = text.find(hint)
        while i != -1:
            j = i - 1
            while j >= 0 and text[j].isspace():
                j -= 1
            if j >= 0 and text[j].isdigit() and GRADED_RANGE.search(text, max(0, i - 48), i + len(hint) + 8):
                return True
            i = text.find(hint, i + 1)
    return False


def asks_rationale(text: str) -> bool:
    """Whether the text asks for a written reason: "explain why", "justify", "give reasons",
    "show your work"... (lower-case text)."""
    return match_at_word_starts(RATIONALE_AT, text, RATIONALE_STARTS)


# Supersets of what asks_graded_scale and asks_rationale find, as RE2 patterns: RE2 reads a text
# once (a DFA, linear), where the exact checks scan it once per start phrase and hint (18 scans).
# Superset: the same phrases behind RE2's ASCII \b, which holds wherever the exact checks' boundary
# (no letter, digit or "_" before) holds; for the number ranges, a digit or any non-ASCII character,
# then spaces or non-ASCII characters, then a scale word (every range the exact check accepts has
# that shape, whatever str.isdigit / str.isspace characters it is made of).
_GRADED_PREFILTER = (r"\b(?:" + GRADED_AT.pattern + r")"
                     r"|(?:[0-9]|[^\x00-\x7f])(?:[\t-\r\x1c-\x20]|[^\x00-\x7f])*(?:scale|point|star)")
_RATIONALE_PREFILTER = r"\b(?:" + RATIONALE_AT.pattern + r")"
_CLAIM_PREFILTER = "|".join(CLAIM_HINTS)
"""asks_claim_check is false unless one of its hint words occurs: the hints are its prefilter."""
_asks_prefilter: Any = None


def prompt_phrases(text: str, prompt: str) -> tuple[bool, bool, bool]:
    """``(asks_graded_scale(text), asks_rationale(text), asks_claim_check(prompt))`` for a ``prompt``
    that is a prefix of ``text``.

    One RE2 pass over ``text`` with the three prefilters as an RE2 set says which of them can
    match anywhere; an exact check runs only for those (usually none).
    """
    global _asks_prefilter
    if _asks_prefilter is None:
        import re2

        prefilters = re2.Set.SearchSet()
        for pattern in (_GRADED_PREFILTER, _RATIONALE_PREFILTER, _CLAIM_PREFILTER):  # indexes 0, 1, 2
            prefilters.Add(pattern.encode())
        prefilters.Compile()
        _asks_prefilter = prefilters
    try:
        data = text.encode()
    except UnicodeEncodeError:  # a lone surrogate (task validation rejects them): the exact checks
        return asks_graded_scale(text), asks_rationale(text), asks_claim_check(prompt)
    found = _asks_prefilter.Match(data)
    if found is None:
        return False, False, False
    return (0 in found and asks_graded_scale(text), 1 in found and asks_rationale(text),
            2 in found and asks_claim_check(prompt))
