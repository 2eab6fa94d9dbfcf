"""YAML loading that cannot execute code and cannot be made to expand without bound.

Why not plain ``yaml.safe_load``: it is safe from ``!!python/...`` tags (the safe constructor has
no constructor for them, so they fail to load and nothing runs), but not from a "billion laughs"
document: nine lines of nested aliases compose into a few nodes that, once copied by pydantic or
dumped to JSON, become billions. Composing keeps aliases as shared nodes, so the expansion can be
counted cheaply before anything is built from the document.

Why duplicate keys are an error: YAML says a mapping's keys are unique, but PyYAML keeps the last
value without a word, so ``options: {a: x, a: y}`` would silently become one option. The loader's
mapping constructor refuses instead, naming the key, its line and the path of the mapping.
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


class DuplicateKeyError(ValueError):
    """A mapping names the same key twice; ``path`` is the mapping's dotted path, ``line`` 1-based."""

    def __init__(self, key: Any, *, path: str = "", line: int | None = None) -> None:
        self.key, self.path, self.line = key, path, line
        where = f"{path}: " if path else ""
        at = f" (line {line})" if line is not None else ""
        super().__init__(f"{where}duplicate key {key!r}{at}: each key may appear once")


class _DuplicateFound(Exception):
    """Raised inside construction; ``load_yaml`` adds the path from the node tree."""

    def __init__(self, key: Any, mapping: yaml.Node, key_node: yaml.Node) -> None:
        super().__init__(key)
        self.key, self.mapping, self.key_node = key, mapping, key_node


_MERGE_TAG = "tag:yaml.org,2002:merge"


class _UniqueKeyLoader(_Loader):  # type: ignore[misc, valid-type]
    """The safe loader, whose mappings refuse a key they already hold (merge keys ``<<`` aside:
    a key that overrides a merged one is the point of merging, not a duplicate)."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        if isinstance(node, yaml.MappingNode):
            seen: set[Any] = set()
            for key_node, _ in node.value:
                if key_node.tag == _MERGE_TAG:
                    continue
                key = self.construct_object(key_node, deep=True)
                try:
                    if key in seen:
                        raise _DuplicateFound(key, node, key_node)
                    seen.add(key)
                except TypeError:  # an unhashable key: the base constructor reports it
                    continue
        return super().construct_mapping(node, deep=deep)  # type: ignore[no-any-return]


def _path_to(root: yaml.Node, target: yaml.Node) -> str:
    """The dotted path (``task.questions[0].options``) of ``target`` under ``root``; '' at the root."""
    stack: list[tuple[yaml.Node, str]] = [(root, "")]
    seen: set[int] = set()
    while stack:
        node, path = stack.pop()
        if node is target:
            return path
        if id(node) in seen:
            continue
        seen.add(id(node))
        if isinstance(node, yaml.MappingNode):
            for key, value in node.value:
                name = str(key.value) if isinstance(key, yaml.ScalarNode) else "?"
                stack.append((value, f"{path}.{name}" if path else name))
        elif isinstance(node, yaml.SequenceNode):
            for i, value in enumerate(node.value):
                stack.append((value, f"{path}[{i}]"))
    return ""


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
    ``max_depth`` (collections; the task object itself is level 1), ``DuplicateKeyError`` for a
    key given twice in one mapping, and ``RecursionError`` for nesting deeper than the parser's
    stack (the caller reports all of them as bad input).
    """
    _check_depth(text, max_depth)
    loader = _UniqueKeyLoader(text)
    try:
        root = loader.get_single_node()
        found = alias_expansions(root, max_aliases)
        if found > max_aliases:
            raise YamlLimitError(f"more than {max_aliases} YAML alias expansions "
                                 f"(limits.max_yaml_aliases)")
        if root is None:
            return None
        try:
            return loader.construct_document(root)
        except _DuplicateFound as dup:
            raise DuplicateKeyError(dup.key, path=_path_to(root, dup.mapping),
                                    line=dup.key_node.start_mark.line + 1) from None
    finally:
        loader.dispose()
