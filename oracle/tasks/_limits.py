"""Explicit bounds on task input, so hostile or careless files fail fast with a clear error.

Why limits at all: every one of these inputs used to reach an internal error or a hang — a
64-level-deep JSON array is harmless, a 100,000-level one blew the interpreter's stack; a YAML file
of a few hundred bytes whose aliases expand into billions of nodes grew to gigabytes once pydantic
copied it. A bound checked before the expensive step turns each of those into exit 2 naming the
limit and how to raise it. The defaults are far above any real task and live here, once.
"""

from __future__ import annotations

import re
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

MIB = 1024 * 1024


class InputLimits(BaseModel):
    """Bounds on one task file, one JSONL line and one task; each error names the limit it hit."""

    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)

    max_file_bytes: int = Field(default=64 * MIB, ge=1)
    """A .json/.yaml task file, or one line of a .jsonl file, larger than this is refused unread."""
    max_depth: int = Field(default=64, ge=4, le=10_000)
    """Nesting depth of arrays/objects in one task (the task object itself is depth 1)."""
    max_trajectories: int = Field(default=10_000, ge=1)
    """Candidates per task."""
    max_yaml_aliases: int = Field(default=100, ge=0)
    """YAML alias references (``*name``) per document; the guard against billion-laughs files."""
    max_expanded_bytes: int = Field(default=64 * MIB, ge=1024)
    """Size of a YAML document once every alias is expanded (text of its scalars plus a few bytes
    per node), counted while the document is composed: a few aliases of a large node cannot
    turn a small file into hundreds of megabytes."""


DEFAULT_LIMITS = InputLimits()


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
