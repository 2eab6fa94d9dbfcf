"""pydantic's ``ValidationError`` -> our ``TaskValidationError``, naming every bad field.

One place for the translation, so the file loader, the batch, and a library caller constructing
``Task(...)`` by hand all get the same message: dotted field path, pydantic's reason ("unknown
key" for a misspelt one), and for a single-document YAML/JSON file the line of the offending key.
Library callers catch one error type (an ``OracleError``), never a raw pydantic error.
"""

from __future__ import annotations

import re
from typing import Any

from pydantic import ValidationError

from oracle.errors import TaskValidationError
from oracle.tasks.testspec import TEST_KINDS

NAMED_FIELD_ERROR = "named_field"
"""Error type raised where pydantic's own location would be too coarse (a message list validated
on its own, a depth limit deep inside ``metadata``); its context carries the full field path."""

_NAMED = re.compile(r"^([A-Za-z_][\w]*): (.+)$", re.DOTALL)
"""A validator message that starts with the field it is about (``criteria: ...``)."""

LINE_LOOKUP_MAX_CHARS = 1_000_000
"""Finding a field's line means composing the document again (pure-Python YAML): worth it for a
hand-written file, not for a 60 MB one, whose error still names the field."""

MAX_LISTED = 20
"""A file with 10,000 bad candidates gets a readable message, not 10,000 lines."""


def _dotted(loc: tuple[Any, ...]) -> str:
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += ("." if out else "") + str(part)
    return out


def _clean_loc(loc: tuple[Any, ...]) -> tuple[Any, ...]:
    """Drop pydantic's union-branch tag (the 'assert' in tests.0.assert.code)."""
    out: list[Any] = []
    for i, part in enumerate(loc):
        if i >= 2 and loc[i - 2] == "tests" and isinstance(loc[i - 1], int) and isinstance(part, str) \
                and part in TEST_KINDS:
            continue
        out.append(part)
    return tuple(out)


_PART = re.compile(r"([^.\[\]]+)|\[(\d+)\]")


def _loc_of(field: str) -> tuple[Any, ...]:
    """``task.tests[0].code`` back into ``("task", "tests", 0, "code")``, to find its line."""
    return tuple(int(index) if index else name for name, index in _PART.findall(field))


def _line_of(node: Any, loc: tuple[Any, ...]) -> int | None:
    """Follow ``loc`` through a YAML node tree; return the 1-based line of the deepest match."""
    import yaml

    line = None
    for part in loc:
        if isinstance(node, yaml.MappingNode) and isinstance(part, str):
            for key, value in node.value:
                if key.value == part:
                    line = key.start_mark.line + 1
                    node = value
                    break
            else:
                return line
        elif isinstance(node, yaml.SequenceNode) and isinstance(part, int) and part < len(node.value):
            node = node.value[part]
            line = node.start_mark.line + 1
        else:
            return line
    return line


def format_validation_error(exc: ValidationError, *, source: str | None = None, line: int | None = None,
                            text: str | None = None, prefix: tuple[Any, ...] = ()) -> TaskValidationError:
    """Turn pydantic's error into one readable message naming every bad field.

    ``prefix`` is prepended to every location (``("task",)`` when a ``Task`` is validated on its
    own), so a field is named the same way whether it came from a file or from Python.
    """
    first_field = None
    parts = []
    node = None
    if text is not None and line is None and len(text) <= LINE_LOOKUP_MAX_CHARS:
        import yaml  # only on this error path: valid tasks never load the YAML parser

        try:
            node = yaml.compose(text)
        except (yaml.YAMLError, RecursionError, ValueError):
            node = None
    first_line = line
    errors = exc.errors()
    for err in errors[:MAX_LISTED]:
        loc = _clean_loc(prefix + tuple(err["loc"]))
        field = _dotted(loc) or "(root)"
        msg = err["msg"]
        if err["type"] == NAMED_FIELD_ERROR:
            field, msg = err["ctx"]["field"], err["ctx"]["reason"]
            loc = _loc_of(field)  # the field it names is where the line is (tests[2], not task)
        elif err["type"] == "value_error":  # our own validators say "field: reason"
            msg = str(err.get("ctx", {}).get("error", msg))
            named = _NAMED.match(msg)
            if named:
                field = _dotted(loc + (named.group(1),)) if loc else named.group(1)
                msg = named.group(2)
        first_field = first_field or field
        where = ""
        if node is not None:
            found = _line_of(node, loc)
            if found is not None:
                where = f" (line {found})"
                first_line = first_line or found
        if err["type"] == "extra_forbidden":
            msg = "unknown key"
        parts.append((field, msg, where))
    if len(parts) == 1:  # the line is already in the message prefix
        parts = [(field, msg, "") for field, msg, _ in parts]
    more = f"; and {len(errors) - MAX_LISTED} more errors" if len(errors) > MAX_LISTED else ""
    error = TaskValidationError("; ".join(f"{f}: {m}{w}" for f, m, w in parts) + more, field=first_field,
                                line=first_line, source=source)
    error.validation_error = exc  # lets a file loader add lines without validating again
    return error


