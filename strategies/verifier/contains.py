"""The ``contains`` reference check: the reference's words appear, whole, in the answer, and
nothing else in the answer may negate it or offer it as one of several options.

Both sides are read as ``normalize_text`` reads them (case folded, split at whitespace, valueless
marks dropped at word edges), so a sign, digit or decimal point always counts: ``-5`` never
contains ``5``, ``13.5`` never contains ``3.5``, ``5,000`` never contains ``5``.

Deliberately conservative (a false fail over a false pass): the answer fails when, outside the
matched words, it holds a negation cue ("It was not Jane Austen") or an alternatives or hedge cue
("Austen, Brontë or Shelley", "maybe Austen"). A cue inside the matched words is the reference's
own ("not guilty" matches "He is not guilty"). When the reference holds a number, bound and
approximation words count too ("more than 5", "about 5", "at least 5", "≥ 5" are not 5), and so
does a sign standing alone right before it ("- 5" is not 5). The reason names
the cue, so a task that means it can say ``answer_pattern`` or mode ``normalized`` instead.
"""

from __future__ import annotations

import unicodedata
from bisect import bisect_left
from dataclasses import dataclass

from oracle.strategies.verifier.answer_text import Word

NEGATION_CUES = frozenset({
    "not", "no", "never", "neither", "nor", "none", "nobody", "nothing", "nowhere", "cannot", "without",
    "false", "incorrect", "wrong", "untrue", "isnt", "wasnt", "arent", "werent", "dont", "doesnt", "didnt",
    "cant", "couldnt", "wont", "wouldnt", "shouldnt", "hasnt", "havent", "hadnt", "aint", "mustnt", "neednt"})
"""Words that may deny what follows them; any word ending in ``n't`` or ``n’t`` counts too."""
ALTERNATIVE_CUES = frozenset({
    "or", "either", "whether", "maybe", "perhaps", "possibly", "probably", "likely", "unlikely", "might",
    "unsure", "uncertain", "unclear", "guess", "versus", "vs", "alternatively", "otherwise", "and/or"})
"""Words that offer the answer as one option among others, or hedge it."""
BOUND_CUES = frozenset({
    "than", "least", "most", "between", "about", "around", "approximately", "approx", "roughly", "nearly",
    "almost", "over", "under", "above", "below", "up", "upto", "exceeds", "exceeding", "beyond", "within"})
"""With a number in the reference: words that make the number a bound or an estimate."""


NEGATION_SIGNS = frozenset({"≠", "!=", "=/=", "<>"})
"""A word that is only a "not equal" sign negates too."""
BOUND_SIGNS = frozenset("<>≤≥≦≧⩽⩾~≈≃≅∼±∓")
"""With a number in the reference: a word made only of these (``≥ 5``, ``~ 5``) bounds it, as a
sign directly before the number (``≥5``) already makes it another word."""


def _lone_sign(word: str) -> bool:
    """A word made only of dashes and math symbols other than ``=`` (``-``, ``−``, ``+``, ``±``)."""
    return all(ch != "=" and unicodedata.category(ch) in ("Pd", "Sm") for ch in word)


def _negation(word: str) -> bool:
    return word in NEGATION_CUES or word in NEGATION_SIGNS or word.endswith(("n't", "n’t"))


@dataclass(frozen=True)
class ContainsResult:
    passed: bool
    at: int | None
    """Offset in the answer of the first matched word (the accepted match, else the first match)."""
    cue: str | None = None
    cue_kind: str | None = None
    """``negation``, ``alternatives``, ``bound`` or ``sign`` (a lone sign word right before a number)."""


def _cue(word: str, numeric_reference: bool) -> str | None:
    if _negation(word):
        return "negation"
    if word in ALTERNATIVE_CUES:
        return "alternatives"
    if numeric_reference and (word in BOUND_CUES or all(ch in BOUND_SIGNS or ch == "=" for ch in word)
                              and any(ch in BOUND_SIGNS for ch in word)):
        return "bound"
    return None


def find(answer: list[Word], reference: list[str], *, numeric_reference: bool) -> ContainsResult:
    """Whether ``reference`` (its word cores, at least one) appears in ``answer`` as whole words with
    no cue outside the match. Linear in the answer times the reference's word count: the cues are
    located once, and each match asks only whether any lies outside it."""
    cores = [w.core for w in answer]
    n, k = len(cores), len(reference)
    cue_at = [i for i, c in enumerate(cores) if _cue(c, numeric_reference)]
    first: ContainsResult | None = None
    for i in range(n - k + 1):
        if cores[i] != reference[0] or cores[i:i + k] != reference:
            continue
        if numeric_reference and i > 0 and _lone_sign(cores[i - 1]):
            # "- 5" is -5 written loosely, not 5: the sign is the number's, whatever else is said.
            first = first or ContainsResult(False, answer[i].at, cores[i - 1], "sign")
            continue
        inside = bisect_left(cue_at, i + k) - bisect_left(cue_at, i)
        if inside == len(cue_at):
            return ContainsResult(True, answer[i].at)
        if first is None:
            j = cue_at[0] if cue_at[0] < i else cue_at[bisect_left(cue_at, i + k)]
            first = ContainsResult(False, answer[i].at, cores[j], _cue(cores[j], numeric_reference))
    return first or ContainsResult(False, None)
