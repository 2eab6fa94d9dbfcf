"""A task's pattern run on candidate-controlled text, without letting the text stall the host.

The pattern is the task author's; the text is a candidate's answer, which may be built to make a
backtracking engine run for hours. So a pattern runs on RE2 (google-re2: linear time in the text)
whenever RE2 has every construct it uses; a pattern that needs one RE2 lacks (backreferences,
lookaround) runs with Python's ``re`` in a child process with a wall-clock bound. Both paths read
``\\d``, ``\\w``, ``\\s`` and ``\\b`` as ASCII (RE2's meaning), so the engine never changes a verdict.
The syntax is Python's ``re`` (what task validation compiles); RE2 accepts the common subset.
"""

from __future__ import annotations

import json
import subprocess
import sys
from functools import lru_cache
from typing import Any, NamedTuple

try:
    import re2  # google-re2: linear-time matching
except ImportError:  # pragma: no cover - every pattern then takes the bounded child-process path
    re2 = None

REGEX_TIMEOUT_S = 2.0
"""Wall-clock bound for a pattern RE2 cannot run (backreferences, lookaround)."""

_CHILD_FULLMATCH = ("import json, re, sys\n"
                    "pattern, text = json.load(sys.stdin)\n"
                    "print(1 if re.fullmatch(pattern, text, re.DOTALL | re.ASCII) else 0)\n")
"""re.ASCII: ``\\d``, ``\\w``, ``\\s`` and ``\\b`` mean what they mean in RE2 (ASCII), on both paths."""

_CHILD_LAST = ("import json, re, sys\n"
               "pattern, text = json.load(sys.stdin)\n"
               "rx = re.compile(pattern, re.ASCII)\n"
               "group = 'answer' if 'answer' in rx.groupindex else (1 if rx.groups else 0)\n"
               "last = None\n"
               "for last in rx.finditer(text):\n"
               "    pass\n"
               "print(json.dumps(None if last is None else list(last.span(group))))\n")


class PatternTimeout(Exception):
    """The bounded fallback ran out of time (the pattern backtracks on this text)."""


class Span(NamedTuple):
    """Where the answer group of a match lies in the text; (-1, -1) when the group took no part."""

    start: int
    end: int


@lru_cache(maxsize=256)
def _re2_pattern(pattern: str, dot_nl: bool) -> Any | None:
    """The RE2 program for ``pattern``, or None when RE2 lacks a construct it uses."""
    if re2 is None:
        return None
    options = re2.Options()
    options.dot_nl = dot_nl  # as re.DOTALL
    options.log_errors = False
    try:
        return re2.compile(pattern, options)
    except (re2.error, UnicodeError):  # a lone surrogate has no UTF-8 form: the fallback takes it
        return None


def _utf8(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _child(script: str, pattern: str, text: str, timeout_s: float) -> str:
    try:
        done = subprocess.run([sys.executable, "-I", "-c", script], input=json.dumps([pattern, text]),
                              capture_output=True, text=True, timeout=timeout_s, check=False)
    except subprocess.TimeoutExpired:
        raise PatternTimeout(pattern) from None
    return done.stdout.strip()


def regex_fullmatch(pattern: str, text: str, *, timeout_s: float = REGEX_TIMEOUT_S) -> bool | None:
    """Whether ``pattern`` matches all of ``text`` (``.`` matches newlines); None when the bounded
    fallback ran out of time."""
    program = _re2_pattern(pattern, True)
    if program is not None and _utf8(text):
        return program.fullmatch(text) is not None
    try:
        return _child(_CHILD_FULLMATCH, pattern, text, timeout_s) == "1"
    except PatternTimeout:
        return None


def last_match(pattern: str, text: str, *, timeout_s: float = REGEX_TIMEOUT_S) -> Span | None:
    """The span of the answer group of the LAST match of ``pattern`` in ``text``, or None when it
    never matches. The answer group is the one named ``answer``, else group 1, else the whole
    match. ``.`` does not match a newline unless the pattern says ``(?s)``; ``^``/``$`` are the
    text's ends unless it says ``(?m)``. Raises ``PatternTimeout`` when the fallback ran out of time.
    """
    program = _re2_pattern(pattern, False)
    if program is not None and _utf8(text):
        group = program.groupindex.get("answer", 1 if program.groups else 0)
        found = None
        for found in program.finditer(text):
            pass
        return None if found is None else Span(*found.span(group))
    out = json.loads(_child(_CHILD_LAST, pattern, text, timeout_s) or "null")
    return None if out is None else Span(*out)
