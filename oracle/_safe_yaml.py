"""YAML loading that cannot execute code and cannot be made to expand without bound.

Why not plain ``yaml.safe_load``: it is safe from ``!!python/...`` tags (the safe constructor has
no constructor for them, so they fail to load and nothing runs), but not from a "billion laughs"
document: nine lines of nested aliases compose into a few nodes that, once copied by pydantic or
dumped to JSON, become billions. Composing keeps aliases as shared nodes, so the expansion can be
counted cheaply before anything is built from the document.
"""

from __future__ import annotations

from typing import Any

import yaml

try:  # the libyaml parser when present: same result, faster on big files
    _Loader: type = yaml.CSafeLoader  # type: ignore[attr-defined]
except AttributeError:  # pragma: no cover - depends on how PyYAML was built
    _Loader = yaml.SafeLoader


class YamlLimitError(ValueError):
    """The document is well formed but nests or expands past a limit."""


def alias_expansions(root: yaml.Node | None, limit: int) -> int:
    """How many times a walk of the expanded document re-enters a node it has already seen.

    Each re-entry is one alias expansion (including expansions nested inside an expanded alias,
    which is what makes billion-laughs documents grow geometrically). The walk stops as soon as
    ``limit`` is passed, so its cost is bounded by ``(limit + 1) x distinct nodes`` whatever the
    document; a recursive alias (``&a [*a]``) is counted the same way and stops too.
    """
    if root is None:
        return 0
    seen: set[int] = set()
    count = 0
    stack: list[yaml.Node] = [root]
    while stack:
        node = stack.pop()
        if id(node) in seen:
            count += 1
            if count > limit:
                return count
        seen.add(id(node))
        if isinstance(node, yaml.SequenceNode):
            stack.extend(reversed(node.value))
        elif isinstance(node, yaml.MappingNode):
            for key, value in reversed(node.value):
                stack.append(value)
                stack.append(key)
    return count


def _check_depth(text: str, max_depth: int) -> None:
    """Stream the parser's events (no tree) and stop at the first collection past ``max_depth``.

    Why a separate pass: composing a 20,000-deep flow sequence takes seconds in libyaml and
    a deeper one longer still, while the event stream reaches level ``max_depth`` after a few
    dozen events and stops there.
    """
    loader = _Loader(text)
    depth = 0
    try:
        while loader.check_event():
            event = loader.get_event()
            if isinstance(event, (yaml.SequenceStartEvent, yaml.MappingStartEvent)):
                depth += 1
                if depth > max_depth:
                    raise YamlLimitError(f"nested deeper than {max_depth} levels (limits.max_depth)")
            elif isinstance(event, (yaml.SequenceEndEvent, yaml.MappingEndEvent)):
                depth -= 1
    finally:
        loader.dispose()


def load_yaml(text: str, *, max_aliases: int, max_depth: int = 64) -> Any:
    """Parse one YAML document with the safe constructor after bounding its alias expansion.

    Raises ``yaml.YAMLError`` for malformed YAML and for tags the safe loader does not know
    (``!!python/object/apply:...`` among them), ``YamlLimitError`` past ``max_aliases`` or
    ``max_depth`` (collections; the task object itself is level 1), and
    ``RecursionError`` for nesting deeper than the parser's stack (the caller reports all three
    as bad input).
    """
    _check_depth(text, max_depth)
    loader = _Loader(text)
    try:
        root = loader.get_single_node()
        found = alias_expansions(root, max_aliases)
        if found > max_aliases:
            raise YamlLimitError(f"more than {max_aliases} YAML alias expansions "
                                 f"(limits.max_yaml_aliases)")
        return loader.construct_document(root) if root is not None else None
    finally:
        loader.dispose()
