"""What makes decoded input unusable: nesting past a depth, an integer too large to print, a lone surrogate.

Checked on every document read from outside (task files, config files, stored JSON, rubric
files, human answers) right after parsing, so such a value is refused where it is read, naming
the place, instead of failing later in a hash, a reply body or a terminal. The depth a task file
may nest is ``InputLimits.max_depth`` (oracle/tasks/_limits.py); callers pass it in.
"""

from __future__ import annotations

import re
from typing import Any

MAX_INT_BITS = 13_000
"""About 3,900 decimal digits: under Python's 4,300-digit str() limit, so every integer that gets
in can still be hashed and written out as JSON (a 5,000-digit one could not)."""


def _name(path: tuple[Any, ...]) -> str:
    out = ""
    for part in path:
        out += f"[{part}]" if isinstance(part, int) else ("." if out else "") + str(part)
    out = out or "(root)"
    return out if len(out) <= 120 else out[:100] + "...(deeper)"


_SURROGATE = re.compile("[\ud800-\udfff]")
"""A lone surrogate: a JSON ``"\\ud800"`` escape decodes to one, and no UTF-8 encoder (hashing,
a reply body, a terminal) can write it, so text holding one is refused where it is read."""


def scalar_problem(value: Any) -> str | None:
    """Why one decoded scalar (or key) cannot be hashed, compared or printed, or None."""
    if isinstance(value, str):
        found = _SURROGATE.search(value)
        if found is not None:
            return f"text holds a lone surrogate (U+{ord(found.group()):04X}, not valid Unicode)"
    elif isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > MAX_INT_BITS:
        return "integer too large (more than about 3,900 digits)"
    return None


def input_problem(value: Any, max_depth: int) -> tuple[str, str] | None:
    """(field, reason) for what is wrong with decoded input, or None: too deep, a huge integer,
    or text with a lone surrogate (in a value or a key).

    Iterative (a 100,000-level document cannot overflow the stack here) and stops at the first
    problem; the message names the place. A scalar has depth 0, ``[]`` depth 1, ``[[1]]`` depth 2.
    A cycle (possible from a recursive YAML alias) is reported as too deep.
    """
    problem = scalar_problem(value)
    if problem is not None:
        return "(root)", problem
    stack: list[tuple[Any, int, tuple[Any, ...]]] = [(value, 0, ())]
    while stack:
        node, depth, path = stack.pop()
        if isinstance(node, dict):
            items: Any = node.items()
            keyed = True
        elif isinstance(node, list):
            items = enumerate(node)
            keyed = False
        else:
            continue
        depth += 1
        if depth > max_depth:
            return _name(path), f"nested deeper than {max_depth} levels (limits.max_depth)"
        for key, child in items:
            if keyed and not isinstance(key, str) or isinstance(key, str) and _SURROGATE.search(key):
                problem = scalar_problem(key)
                if problem is not None:
                    return _name(path + ("(key)",)), problem
            if isinstance(child, (dict, list)):
                stack.append((child, depth, path + (_printable(key),)))
            elif isinstance(child, (str, int)):
                problem = scalar_problem(child)
                if problem is not None:
                    return _name(path + (_printable(key),)), problem
    return None


def _printable(key: Any) -> Any:
    """A key as it may appear in a message: ints as they are, text without surrogates."""
    if isinstance(key, int) and not isinstance(key, bool):
        return key if key.bit_length() <= 64 else "(huge key)"
    text = str(key) if not isinstance(key, str) else key
    return _SURROGATE.sub("\ufffd", text)
