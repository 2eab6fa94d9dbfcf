"""Where a field is text, a YAML scalar is read as the text it was written as.

PyYAML types an unquoted scalar by its text alone (YAML 1.1): ``reference: 4`` becomes the int 4,
``1.10`` the float 1.1, ``no`` False, ``010`` the octal 8, ``12:30`` the sexagesimal 750,
``2024-01-31`` a date. A task author who writes ``reference: 4`` means the text "4", and quoting
every such value is a trap, not a rule. So when a task from a YAML file fails validation because
a text field got a non-text value (pydantic's ``string_type``, also inside a union), and that value
came from such a plain scalar, the scalar's own source text is put there and the task validated
again. The substitution happens only where it is asked for: a field typed Any
(``CallTest.expected``, tool ``args``) keeps the resolved value, and a JSON file is never touched
(a JSON number is a number).

Each round substitutes at least one new place (a place holds text after it), so the rounds are
bounded by the number of such scalars; ``MAX_ROUNDS`` bounds them anyway. Only the containers on
the path to a substituted value are copied: a value shared through a YAML alias is never changed
in its other places.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from typing import Any

MAX_ROUNDS = 8
"""Validation attempts after the first (pydantic reports every error of a pass at once, so one
round is the usual case; a union or a before-validator can reveal more in the next)."""
TEXT_ERRORS = frozenset({"string_type"})
"""pydantic error types that mean "this field wants text"."""
_RESOLVED_TAGS = frozenset(f"tag:yaml.org,2002:{t}" for t in ("bool", "int", "float", "timestamp"))
"""What a plain scalar may be resolved to besides text; null is left alone (``~`` means no value)."""
_KEY = "[key]"


def _value_of(node: Any) -> Any:
    """What the safe loader builds from a scalar node."""
    from yaml.constructor import SafeConstructor

    return SafeConstructor().construct_object(node, deep=True)


def _same(a: Any, b: Any) -> bool:
    if type(a) is not type(b):
        return False
    return bool(a == b) or (isinstance(a, float) and math.isnan(a) and math.isnan(b))


def _targets(node: Any, data: Any, loc: Sequence[Any], i: int, path: tuple[Any, ...]
             ) -> Iterator[tuple[Any, tuple[Any, ...], bool]]:
    """(scalar node, path into ``data``, is_key) for every way ``loc`` can be followed through the
    node tree. A location part that is not a key or index is pydantic's label for a union member
    or a tagged-union kind (``str``, ``io``); it is skipped, and so, as an alternative, is a part
    that happens to also be a key (a ``call`` test's kind ``call`` beside its field ``call``)."""
    import yaml

    if i == len(loc):
        if isinstance(node, yaml.ScalarNode):
            yield node, path, False
        return
    part = loc[i]
    if isinstance(node, yaml.MappingNode) and isinstance(data, dict) and part != _KEY:
        for key_node, value_node in node.value:
            if not isinstance(key_node, yaml.ScalarNode):
                continue
            key = key_node.value if key_node.tag == "tag:yaml.org,2002:str" else _value_of(key_node)
            try:
                hit = key == part and key in data
            except TypeError:
                continue
            if not hit:
                continue
            if i + 1 < len(loc) and loc[i + 1] == _KEY:
                yield key_node, path + (key,), True
            else:
                yield from _targets(value_node, data[key], loc, i + 1, path + (key,))
            break
    elif isinstance(node, yaml.SequenceNode) and isinstance(data, list) and isinstance(part, int) \
            and not isinstance(part, bool) and 0 <= part < min(len(node.value), len(data)):
        yield from _targets(node.value[part], data[part], loc, i + 1, path + (part,))
    if isinstance(part, str):
        yield from _targets(node, data, loc, i + 1, path)


def _apply(data: Any, edits: list[tuple[tuple[Any, ...], str, bool]]) -> Any:
    """``data`` with each edit's value (or, ``is_key``, key) at its path replaced by its text.

    The containers on the edited paths are copied once each (per path, so a container shared
    through a YAML alias is copied apart, never changed in its other places); nothing else is. A
    renamed key that would collide with another key of its mapping is left as it is."""
    top: Any = dict(data) if isinstance(data, dict) else list(data)
    copies: dict[tuple[Any, ...], Any] = {(): top}
    for path, text, is_key in edits:
        container: Any = top
        prefix: tuple[Any, ...] = ()
        for part in path[:-1]:
            prefix += (part,)
            if prefix not in copies:
                child = container[part]
                copies[prefix] = dict(child) if isinstance(child, dict) else list(child)
                container[part] = copies[prefix]
            container = copies[prefix]
        last = path[-1]
        if not is_key:
            container[last] = text
        elif text not in container:
            items = [((text if _same(k, last) else k), v) for k, v in container.items()]
            container.clear()
            container.update(items)
    return top


def as_text_where_text_is_wanted(data: Any, root: Any, errors: list[dict[str, Any]]) -> Any | None:
    """``data`` with the source text of each plain YAML scalar that failed as "not text", or None
    when no error is one (then the errors stand as they are)."""
    edits: list[tuple[tuple[Any, ...], str, bool]] = []
    for err in errors:
        if err.get("type") not in TEXT_ERRORS:
            continue
        for node, path, is_key in _targets(root, data, tuple(err.get("loc", ())), 0, ()):
            if not path or not getattr(node, "resolved_from_text", False) or node.tag not in _RESOLVED_TAGS:
                continue
            if _same(_value_of(node), err.get("input")):
                edits.append((path, node.value, is_key))
                break
    return _apply(data, edits) if edits else None
