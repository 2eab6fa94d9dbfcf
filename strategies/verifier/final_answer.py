"""Which part of a candidate's reply is its answer, before the reference check compares it.

Models reason first and answer last. ``reference_check.answer_pattern`` (a regex) or
``reference_check.extract: final`` picks the answer out of the reply; ``extract: whole`` (the
default) compares the whole reply. When extraction finds nothing the candidate fails with that
reason: silently falling back to the whole reply would let a reply that never commits to an answer
pass on a word it mentions in passing.

``final`` takes, in order: the last LaTeX ``\\boxed{...}`` whose braces balance (one
``\\text{...}``-like wrapper around all of its content is removed); else the rest of the line
after the last "the answer is", "final answer:" or "answer:" (any case); else the last non-empty
line. Markdown emphasis, code ticks or ``$`` wrapped around the extracted answer on both sides
are removed (``**42**.`` -> ``42``; a lone ``$5`` keeps its ``$``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from oracle.strategies.verifier.safe_regex import REGEX_TIMEOUT_S, PatternTimeout, last_match
from oracle.tasks.testspec import ReferenceCheck

_BOXED = re.compile(r"\\(?:boxed|fbox)\s*\{")
_WRAPPER = re.compile(r"\\(?:text|textbf|textrm|mathrm|mathbf|mbox)\s*\{")
_PHRASE = re.compile(r"\b(?:the\s+)?(?:final\s+)?answer(?:\s+is\b|\s*:)", re.IGNORECASE | re.ASCII)
"""Linear on any text: a match starts only at a word ``the``/``final``/``answer``, and each
quantifier runs over the one whitespace run after a literal. What follows it is read in Python."""
_EDGE_WRAPPERS = "*_`$"


@dataclass(frozen=True)
class Extracted:
    """The answer to compare (None when nothing was found), where it came from, and why not."""

    text: str | None
    source: str
    """``whole``, ``answer_pattern``, ``\\boxed{}``, ``'the answer is'``, ``last line``."""
    problem: str | None = None

    def describe(self) -> str:
        """``final answer '42' (from \\boxed{})``: what the check then compares."""
        return f"final answer {self.text[:80]!r} (from {self.source})" if self.text is not None else ""


_BRACE = re.compile(r"\\[{}]|[{}]")


def _balanced_groups(text: str, opener: re.Pattern[str]) -> list[tuple[int, int]]:
    """(start, end) of the content of every ``opener{...}`` whose braces balance, in one pass.

    ``\\{`` and ``\\}`` are literal braces, not grouping. An opener that never closes is skipped,
    and the text is read once (brace by brace) however many openers it holds."""
    openers = {m.end() - 1 for m in opener.finditer(text)}  # the index of each opener's "{"
    if not openers:
        return []
    stack: list[int] = []
    found: list[tuple[int, int]] = []
    for m in _BRACE.finditer(text):
        brace = m.group()
        if brace == "{":
            stack.append(m.start())
        elif brace == "}" and stack:
            start = stack.pop()
            if start in openers:
                found.append((start + 1, m.start()))
    return found


def _unwrapped(content: str) -> str:
    """``\\text{Jane Austen}`` -> ``Jane Austen`` when one such wrapper spans all of the content."""
    content = content.strip()
    m = _WRAPPER.match(content)
    if m and content.endswith("}"):
        inner = _balanced_groups(content, _WRAPPER)
        if inner and inner[0] == (m.end(), len(content) - 1):
            return content[m.end():-1].strip()
    return content


def _strip_edges(text: str) -> str:
    """Emphasis, ticks or ``$`` wrapped symmetrically around the answer removed (after a closing
    ``.``, ``,``, ``;`` or ``:``, never a ``!`` or ``?``: ``5!`` may be a factorial); spaces trimmed."""
    text = text.strip()
    while True:
        inner = text.rstrip(".,;:").rstrip()
        if len(inner) >= 2 and inner[0] == inner[-1] and inner[0] in _EDGE_WRAPPERS:
            text = inner[1:-1].strip()
        else:
            return text


def _after_phrase(reply: str, at: int) -> str:
    """What follows "the answer is" at ``at``: the rest of its line, else the next line
    ("Final answer:" on a line of its own); a colon after "is" is dropped."""
    line_end = reply.find("\n", at)
    line = reply[at:] if line_end < 0 else reply[at:line_end]
    text = _strip_edges(line.lstrip(" \t:"))
    if text or line_end < 0:
        return text
    next_end = reply.find("\n", line_end + 1)
    return _strip_edges(reply[line_end + 1:] if next_end < 0 else reply[line_end + 1:next_end])


def final_answer(reply: str) -> Extracted:
    """The reply's final answer (module docstring), or why there is none."""
    boxes = _balanced_groups(reply, _BOXED)
    if boxes:
        start, end = max(boxes)  # the box that opens last
        text = _strip_edges(_unwrapped(reply[start:end]))
        if not text:
            return Extracted(None, "\\boxed{}", "the last \\boxed{} is empty")
        return Extracted(text, "\\boxed{}")
    for end in reversed([m.end() for m in _PHRASE.finditer(reply)]):
        text = _after_phrase(reply, end)
        if text:
            return Extracted(text, "'the answer is'")
    for line in reversed(reply.splitlines()):
        text = _strip_edges(line)
        if text:
            return Extracted(text, "last line")
    return Extracted(None, "last line", "no final answer: the reply is empty")


def extract_answer(reply: str, check: ReferenceCheck) -> Extracted:
    """The part of ``reply`` that ``check`` compares with the reference."""
    if check.answer_pattern is not None:
        try:
            span = last_match(check.answer_pattern, reply)
        except PatternTimeout:
            return Extracted(None, "answer_pattern", f"answer_pattern took longer than {REGEX_TIMEOUT_S:g} s on "
                                                     "this answer (it backtracks; it needs a construct RE2 lacks)")
        if span is None:
            return Extracted(None, "answer_pattern",
                             f"answer_pattern /{check.answer_pattern[:60]}/ does not match the answer")
        if span.start < 0:
            return Extracted(None, "answer_pattern", "answer_pattern matched, but its answer group took no part")
        return Extracted(reply[span.start:span.end], "answer_pattern")
    if check.extract == "final":
        return final_answer(reply)
    return Extracted(reply, "whole")
