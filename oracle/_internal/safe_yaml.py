"""YAML loading that cannot execute code and cannot be made to expand without bound.

Why not plain ``yaml.safe_load``: it is safe from ``!!python/...`` tags (the safe constructor has
no constructor for them, so they fail to load and nothing runs), but not from a "billion laughs"
document: nine lines of nested aliases compose into a few nodes that, once copied by pydantic or
dumped to JSON, become billions. Aliases are counted in nodes (``limits.max_yaml_aliases``) and
in bytes (``limits.max_expanded_bytes``: a few aliases of one large string are as bad as many of
a small one), both while the document is composed, before anything is built from it.

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


NODE_BYTES = 8
"""What one node adds to a document's expanded size besides its text (so that a million empty
lists are not free)."""


class _Frame:
    """A collection being composed: its node, the key waiting for its value, and the size and
    node count of what it holds so far (aliases expanded)."""

    __slots__ = ("node", "anchor", "key", "size", "nodes")

    def __init__(self, node: yaml.Node, anchor: str | None) -> None:
        self.node, self.anchor, self.key = node, anchor, None
        self.size, self.nodes = NODE_BYTES, 1


class _BoundedComposer(_UniqueKeyLoader):
    """Composes the node tree itself (over the C parser's events when libyaml is there) so that
    depth, alias expansions and the expanded size are checked as each event arrives.

    Why not count afterwards: composing keeps an alias as a shared node, so the tree is as small
    as the file and a count over it is cheap, but only if the tree is finished; counting while
    composing stops a hostile document at the first event past a limit, whatever follows it.
    """

    def bounded_node(self, *, max_aliases: int, max_depth: int, max_expanded_bytes: int) -> yaml.Node | None:
        self.get_event()  # StreamStart
        if self.check_event(yaml.StreamEndEvent):
            self.get_event()
            return None
        self.get_event()  # DocumentStart
        root = self._compose(max_aliases, max_depth, max_expanded_bytes)
        self.get_event()  # DocumentEnd
        if not self.check_event(yaml.StreamEndEvent):
            event = self.get_event()
            raise yaml.composer.ComposerError("expected a single document in the stream", None,
                                              "but found another document", event.start_mark)
        self.get_event()
        return root

    def _compose(self, max_aliases: int, max_depth: int, max_bytes: int) -> yaml.Node:
        anchors: dict[str, yaml.Node] = {}
        done: dict[str, tuple[int, int]] = {}  # anchor -> (expanded size, expanded node count)
        open_anchors: set[str] = set()
        stack: list[_Frame] = []
        total = expansions = 0
        while True:
            event = self.get_event()
            finished: yaml.Node | None = None
            size = nodes = 0
            if isinstance(event, yaml.AliasEvent):
                name = event.anchor
                if name not in anchors:
                    raise yaml.composer.ComposerError(None, None, f"found undefined alias {name!r}", event.start_mark)
                if name in open_anchors:
                    raise YamlLimitError(f"the alias *{name} refers to a node that contains it: it expands "
                                         f"without end (limits.max_yaml_aliases)")
                size, nodes = done[name]
                expansions += nodes
                if expansions > max_aliases:
                    raise YamlLimitError(f"more than {max_aliases} YAML alias expansions (limits.max_yaml_aliases)")
                total += size
                finished = anchors[name]
            elif isinstance(event, yaml.ScalarEvent):
                tag = event.tag
                if tag is None or tag == "!":
                    tag = self.resolve(yaml.ScalarNode, event.value, event.implicit)
                finished = yaml.ScalarNode(tag, event.value, event.start_mark, event.end_mark, style=event.style)
                # Untagged and unquoted: its type came from its text alone (``no`` -> False).
                finished.resolved_from_text = event.tag is None and not event.style  # type: ignore[attr-defined]
                size, nodes = len(event.value) + NODE_BYTES, 1
                total += size
                self._anchor(anchors, event, finished)
                if event.anchor is not None:
                    done[event.anchor] = (size, nodes)
            elif isinstance(event, (yaml.SequenceStartEvent, yaml.MappingStartEvent)):
                is_seq = isinstance(event, yaml.SequenceStartEvent)
                kind: Any = yaml.SequenceNode if is_seq else yaml.MappingNode
                tag = event.tag
                if tag is None or tag == "!":
                    tag = self.resolve(kind, None, event.implicit)
                node = kind(tag, [], event.start_mark, None, flow_style=event.flow_style)
                self._anchor(anchors, event, node)
                if event.anchor is not None:
                    open_anchors.add(event.anchor)
                stack.append(_Frame(node, event.anchor))
                total += NODE_BYTES
                if len(stack) > max_depth:
                    raise YamlLimitError(f"nested deeper than {max_depth} levels (limits.max_depth)")
            elif isinstance(event, (yaml.SequenceEndEvent, yaml.MappingEndEvent)):
                frame = stack.pop()
                frame.node.end_mark = event.end_mark
                finished, size, nodes = frame.node, frame.size, frame.nodes
                if frame.anchor is not None:
                    open_anchors.discard(frame.anchor)
                    done[frame.anchor] = (size, nodes)
            else:  # pragma: no cover - the parser emits nothing else inside a document
                raise yaml.composer.ComposerError(None, None, f"unexpected {type(event).__name__}",
                                                  event.start_mark)
            if total > max_bytes:
                raise YamlLimitError(f"expands to more than {max_bytes} bytes once its aliases are "
                                     f"expanded (limits.max_expanded_bytes)")
            if finished is None:
                continue
            if not stack:
                return finished
            parent = stack[-1]
            parent.size += size
            parent.nodes += nodes
            if isinstance(parent.node, yaml.SequenceNode):
                parent.node.value.append(finished)
            elif parent.key is None:
                parent.key = finished
            else:
                parent.node.value.append((parent.key, finished))
                parent.key = None

    @staticmethod
    def _anchor(anchors: dict[str, yaml.Node], event: Any, node: yaml.Node) -> None:
        if event.anchor is None:
            return
        if event.anchor in anchors:
            raise yaml.composer.ComposerError(f"found duplicate anchor {event.anchor!r}; first occurrence",
                                              anchors[event.anchor].start_mark, "second occurrence",
                                              event.start_mark)
        anchors[event.anchor] = node


def load_yaml(text: str, *, max_aliases: int, max_depth: int = 64,
              max_expanded_bytes: int = 64 * 1024 * 1024) -> Any:
    """``load_yaml_tree``'s data alone."""
    return load_yaml_tree(text, max_aliases=max_aliases, max_depth=max_depth,
                          max_expanded_bytes=max_expanded_bytes)[0]


def load_yaml_tree(text: str, *, max_aliases: int, max_depth: int = 64,
                   max_expanded_bytes: int = 64 * 1024 * 1024) -> tuple[Any, yaml.Node | None]:
    """Parse one YAML document with the safe constructor, its expansion bounded while composing.

    Raises ``yaml.YAMLError`` for malformed YAML and for tags the safe loader does not know
    (``!!python/object/apply:...`` among them), ``YamlLimitError`` past ``max_aliases`` (nodes
    re-entered through aliases), ``max_depth`` (collections; the task object itself is level 1)
    or ``max_expanded_bytes`` (the document's size with every alias expanded), and
    ``DuplicateKeyError`` for a key given twice in one mapping (the caller reports all of them
    as bad input). Nothing is constructed until the whole tree is known to be within bounds.

    Returns the data and the node tree it was built from (merge keys flattened into their
    mappings, as construction leaves them; None for an empty document). A scalar node whose type
    PyYAML resolved from its plain text alone carries ``resolved_from_text = True``, so a caller
    can take the text back where a field wants text (``oracle.tasks._yaml_text``).
    """
    loader = _BoundedComposer(text)
    try:
        root = loader.bounded_node(max_aliases=max_aliases, max_depth=max_depth,
                                   max_expanded_bytes=max_expanded_bytes)
        if root is None:
            return None, None
        try:
            return loader.construct_document(root), root
        except _DuplicateFound as dup:
            raise DuplicateKeyError(dup.key, path=_path_to(root, dup.mapping),
                                    line=dup.key_node.start_mark.line + 1) from None
    finally:
        loader.dispose()
