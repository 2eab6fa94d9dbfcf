"""Reading JSON the project wrote (stores, releases, evidence, calibration files) without trusting it.

Why not plain ``json.loads``: a file on disk can be edited by anyone who can write it, and
``json.loads`` turns such edits into failures that look like bugs: a 100,000-level array raises
``RecursionError``, a 5,000-digit number ``ValueError`` from the int-to-string limit, and a
``"\\ud800"`` escape decodes to a lone surrogate that no UTF-8 encoder (a hash, a reply, a
terminal) can write later. Here each of those is one ``JsonInputError`` whose message names the
place, so the caller can refuse the file by name (exit 2) instead of crashing somewhere else.
"""

from __future__ import annotations

import json
from typing import Any

from oracle._internal.decoded import input_problem

STORE_MAX_DEPTH = 200
"""Nesting allowed in a stored document: a task (``limits.max_depth`` at most 64 by default)
wrapped in a result, a request and a row stays far below this."""


class JsonInputError(ValueError):
    """The bytes are not JSON we can use; ``field`` names the place ("(file)" when it is the whole)."""

    def __init__(self, reason: str, *, field: str = "(file)") -> None:
        self.reason, self.field = reason, field
        super().__init__(reason if field == "(file)" else f"{field}: {reason}")


def loads_checked(raw: bytes | str, *, max_depth: int = STORE_MAX_DEPTH) -> Any:
    """Decoded JSON, or ``JsonInputError``: not UTF-8, malformed, too deep, a number past the
    int-to-string limit, or text with a lone surrogate."""
    try:
        text = raw.decode("utf-8") if isinstance(raw, (bytes, bytearray)) else raw
    except UnicodeDecodeError as exc:
        raise JsonInputError(f"not UTF-8 text (byte {exc.start})") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise JsonInputError(f"not JSON: {exc.msg} (line {exc.lineno}, column {exc.colno})") from None
    except RecursionError:
        raise JsonInputError(f"nested deeper than {max_depth} levels") from None
    except ValueError as exc:  # "Exceeds the limit (4300 digits) for integer string conversion"
        reason = "a number with more than 4300 digits" if "digits" in str(exc) else str(exc)[:200]
        raise JsonInputError(f"not JSON we can read: {reason}") from None
    problem = input_problem(data, max_depth)
    if problem is not None:
        raise JsonInputError(problem[1], field=problem[0])
    return data
