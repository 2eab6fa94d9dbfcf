"""Read task files (.json, .yaml/.yml, .jsonl) into validated ``TaskInput`` objects.

Errors name the field (pydantic's location, dotted) and the file line, so a user can fix a
thousand-line JSONL file without guessing. A JSONL line is its own record; for JSON and YAML the
line of the offending key is looked up in the document's node tree.

Every way a file can be wrong — missing, a directory, binary, not UTF-8, too big, too deep, a
YAML alias bomb, a 5,000-digit number, a key given twice in one object — is a
``TaskValidationError`` (exit 2 in the CLI), never an internal error; the bounds are
``oracle.config.model.InputLimits``. Why duplicate keys are refused: both parsers keep the last value
without a word, so ``{"options": {"a": .., "a": ..}}`` would silently lose an option, and two
``"reference"`` keys would silently change what a candidate is checked against.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any, BinaryIO, Iterator

from oracle.tasks._validation_errors import LINE_LOOKUP_MAX_CHARS, format_validation_error
from oracle.tasks._yaml_text import MAX_ROUNDS as MAX_TEXT_ROUNDS, as_text_where_text_is_wanted
from oracle.errors import TaskValidationError
from oracle.tasks._limits import DEFAULT_LIMITS, InputLimits
from oracle.tasks.task import TaskInput

_CHUNK = 1 << 20


def parse_task(data: Any, *, source: str | None = None, line: int | None = None,
               text: str | None = None, limits: InputLimits | None = None, yaml_node: Any = None,
               base_dir: str | Path | None = None) -> TaskInput:
    """Validate one decoded task object.

    ``yaml_node``: the YAML node ``data`` was built from (``safe_yaml.load_yaml_tree``). With it, a
    text field that got a number, a bool or a date from an unquoted scalar takes the scalar's
    source text instead (``reference: 4`` is "4"; ``oracle.tasks._yaml_text``).
    ``base_dir``: the directory of the file the task came from; a relative ``task.repository.path``
    or ``bundle`` is taken relative to it (``with_base_dir``)."""
    if not isinstance(data, dict):
        raise TaskValidationError("expected an object with 'task' and 'trajectories'", field="(root)",
                                  line=line, source=source)
    if base_dir is not None:
        data = with_base_dir(data, base_dir)
    context = {"limits": limits or DEFAULT_LIMITS}
    rounds = 0
    while True:
        try:
            return TaskInput.model_validate(data, context=context)
        except TaskValidationError as exc:
            original = getattr(exc, "validation_error", None)
            retyped = None
            if yaml_node is not None and original is not None and rounds < MAX_TEXT_ROUNDS:
                retyped = as_text_where_text_is_wanted(data, yaml_node, original.errors())
            if retyped is None:
                raise _located(exc, source=source, line=line, text=text) from None
            data, rounds = retyped, rounds + 1


def with_base_dir(data: dict[str, Any], base_dir: str | Path) -> dict[str, Any]:
    """``data`` with a relative ``task.repository.path`` or ``bundle`` made absolute against
    ``base_dir`` (a copy; ``data`` itself is not changed).

    Why at load: a task file says ``"bundle": "pager.bundle"`` beside it and works from any working
    directory, in a copy of the repository, and in a batch whose rows later run elsewhere on this
    machine; what the task holds once loaded is the absolute path (so it is in the content hash as
    that path)."""
    task = data.get("task")
    if not isinstance(task, dict) or not isinstance(task.get("repository"), dict):
        return data
    repository: dict[str, Any] = task["repository"]
    changed = {}
    for key in ("path", "bundle"):
        value = repository.get(key)
        if isinstance(value, str) and value.strip() and not value.startswith("/") and "\x00" not in value:
            changed[key] = os.path.normpath(os.path.join(os.path.abspath(base_dir), value))
    if not changed:
        return data
    return {**data, "task": {**task, "repository": {**repository, **changed}}}


def _located(exc: TaskValidationError, *, source: str | None, line: int | None,
             text: str | None) -> TaskValidationError:
    """The same error with the file and line added (each field's line looked up in ``text``)."""
    original = getattr(exc, "validation_error", None)
    if original is not None:
        return format_validation_error(original, source=source, line=line, text=text)
    return TaskValidationError(str(exc), field=exc.field, line=line if line is not None else exc.line,
                               source=source)


def decode_json(raw: str | bytes, *, source: str | None, line: int | None) -> Any:
    """``json.loads`` whose every failure is bad input naming the place, never an internal error.

    Beyond malformed JSON: invalid UTF-8, nesting deep enough to exhaust the parser's stack, and
    integers past Python's 4,300-digit conversion limit all raise ``TaskValidationError``.
    """
    field = "(line)" if line is not None else "(file)"
    duplicates: list[_DuplicateKeys] = []

    def unique_pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        obj = dict(pairs)
        if len(obj) == len(pairs):
            return obj
        marked = _DuplicateKeys(obj)
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                marked.key = key
                break
            seen.add(key)
        duplicates.append(marked)
        return marked

    try:
        text = raw.decode("utf-8") if isinstance(raw, bytes) else raw
        data = json.loads(text, object_pairs_hook=unique_pairs)
    except UnicodeDecodeError as exc:
        raise TaskValidationError(f"not UTF-8 text (byte {exc.start}): binary or wrongly encoded input",
                                  field=field, line=line, source=source) from None
    except json.JSONDecodeError as exc:
        where = f" at column {exc.colno}" if line is not None else ""
        raise TaskValidationError(f"invalid JSON: {exc.msg}{where}", field=field,
                                  line=line if line is not None else exc.lineno, source=source) from None
    except RecursionError:
        raise TaskValidationError("nested too deeply to parse (limits.max_depth)", field=field,
                                  line=line, source=source) from None
    except ValueError as exc:  # "Exceeds the limit (4300 digits) for integer string conversion"
        reason = "a number with more than 4300 digits" if "digits" in str(exc) else str(exc)
        raise TaskValidationError(f"invalid JSON value: {reason}", field=field, line=line, source=source) from None
    if duplicates:
        path, key = _first_duplicate(data)
        at_line = line if line is not None else _duplicate_line(text, path, key)
        raise TaskValidationError(f"{path or '(root)'}: duplicate key {key!r}: each key may appear once",
                                  field=path or "(root)", line=at_line, source=source)
    return data


class _DuplicateKeys(dict):  # type: ignore[type-arg]
    """An object whose source named ``key`` twice (marked while parsing, reported afterwards)."""

    key: str = ""


def _first_duplicate(data: Any) -> tuple[str, str]:
    """(dotted path, key) of the first marked object in document order."""
    stack: list[tuple[Any, str]] = [(data, "")]
    while stack:
        value, path = stack.pop()
        if isinstance(value, _DuplicateKeys):
            return path, value.key
        if isinstance(value, dict):
            stack.extend((v, f"{path}.{k}" if path else str(k)) for k, v in reversed(list(value.items())))
        elif isinstance(value, list):
            stack.extend((v, f"{path}[{i}]") for i, v in reversed(list(enumerate(value))))
    return "", ""


def _duplicate_line(text: str, path: str, key: str) -> int | None:
    """The line of the second ``key`` in the object at ``path`` (JSON read as YAML's node tree, as
    validation errors do); None when the text is too big or the tree cannot be composed."""
    if len(text) > LINE_LOOKUP_MAX_CHARS:
        return None
    import re

    import yaml  # only on this error path

    try:
        node = yaml.compose(text)
    except (yaml.YAMLError, RecursionError, ValueError):
        return None
    for part in re.findall(r"[^.\[\]]+|\[\d+\]", path):
        if isinstance(node, yaml.SequenceNode) and part.startswith("["):
            node = node.value[int(part[1:-1])]
        elif isinstance(node, yaml.MappingNode):
            node = next((v for k, v in node.value if k.value == part), None)
        else:
            return None
    if not isinstance(node, yaml.MappingNode):
        return None
    lines = [k.start_mark.line + 1 for k, _ in node.value if k.value == key]
    return lines[1] if len(lines) > 1 else None


def _decode_yaml(text: str, *, source: str, limits: InputLimits) -> tuple[Any, Any]:
    """The document's data and its node tree (``safe_yaml.load_yaml_tree``)."""
    import yaml  # loaded only when a YAML file is read (a JSON task file never pays for it)

    from oracle._internal.safe_yaml import DuplicateKeyError, YamlLimitError, load_yaml_tree

    try:
        return load_yaml_tree(text, max_aliases=limits.max_yaml_aliases, max_depth=limits.max_depth,
                              max_expanded_bytes=limits.max_expanded_bytes)
    except DuplicateKeyError as exc:
        field = exc.path or "(root)"
        raise TaskValidationError(f"{field}: duplicate key {exc.key!r}: each key may appear once",
                                  field=field, line=exc.line, source=source) from None
    except YamlLimitError as exc:
        raise TaskValidationError(str(exc), field="(file)", source=source) from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        raise TaskValidationError(f"invalid YAML: {exc}", field="(file)",
                                  line=(mark.line + 1) if mark else None, source=source) from None
    except RecursionError:
        raise TaskValidationError("nested too deeply to parse (limits.max_depth)", field="(file)",
                                  source=source) from None
    except ValueError as exc:  # a YAML int past the 4,300-digit conversion limit, and the like
        raise TaskValidationError(f"invalid YAML value: {exc}", field="(file)", source=source) from None


def check_input_file(path: str | Path) -> Path:
    """The path, after checking it exists and is not a directory (nothing read yet)."""
    path = Path(path)
    if not path.exists():
        raise TaskValidationError(f"no such file: {path}", field="(file)")
    if path.is_dir():
        raise TaskValidationError(f"is a directory, not a task file: {path}", field="(file)")
    return path


def _open_checked(path: Path, limits: InputLimits) -> Path:
    """The file, after checking it is a regular file within the size limit (nothing read yet)."""
    check_input_file(path)
    try:
        size = path.stat().st_size
    except OSError as exc:
        raise TaskValidationError(f"cannot read {path}: {exc.strerror}", field="(file)") from None
    if path.suffix.lower() != ".jsonl" and size > limits.max_file_bytes:
        raise TaskValidationError(f"file is {size} bytes; at most {limits.max_file_bytes} "
                                  f"(limits.max_file_bytes)", field="(file)", source=str(path))
    return path


def read_lines(fh: BinaryIO, max_bytes: int, *, digest: bool) -> Iterator[tuple[int, bytes, int, str]]:
    """(number, bytes or b"" when too long, size, sha256) of every non-blank line."""
    number = 0
    while True:
        head = fh.readline(max_bytes + 1)
        if not head:
            return
        number += 1
        if len(head) <= max_bytes or head.endswith(b"\n"):
            if head.strip():
                yield (number, head, len(head.rstrip(b"\r\n")),
                       hashlib.sha256(head.strip()).hexdigest() if digest else "")
            continue
        hasher = hashlib.sha256(head)  # too long: hash the rest as it streams past, keep none of it
        size = len(head)
        while not head.endswith(b"\n"):
            head = fh.readline(_CHUNK)
            if not head:
                break
            hasher.update(head)
            size += len(head)
        size -= head.endswith(b"\n")  # the line's length, as for a short line
        yield number, b"", size, hasher.hexdigest() if digest else ""


def iter_task_lines(path: str | Path, *, limits: InputLimits | None = None
                    ) -> Iterator[tuple[int, TaskInput | TaskValidationError]]:
    """Yield (line number, task or the error for that line) for every non-blank JSONL line.

    Errors are yielded, not raised, so a batch can give every input line its own result row.
    The file is read as bytes, so one line of invalid UTF-8 is that line's error, not the file's,
    and a line past the size limit is skipped over without being held in memory.
    """
    limits = limits or DEFAULT_LIMITS
    path = _open_checked(Path(path), limits)
    try:
        with path.open("rb") as fh:
            for number, raw, size, _ in read_lines(fh, limits.max_file_bytes, digest=False):
                yield number, parse_raw_line(raw, size=size, number=number, source=str(path), limits=limits,
                                             base_dir=path.parent)
    except OSError as exc:
        raise TaskValidationError(f"cannot read {path}: {exc.strerror}", field="(file)") from None


def parse_raw_line(raw: bytes, *, size: int, number: int, source: str,
                   limits: InputLimits, base_dir: str | Path | None = None) -> TaskInput | TaskValidationError:
    """One JSONL line -> its task, or the error naming the line (returned, never raised)."""
    try:
        if size > limits.max_file_bytes:
            raise TaskValidationError(f"line is {size} bytes; at most {limits.max_file_bytes} "
                                      f"(limits.max_file_bytes)", field="(line)", line=number, source=source)
        return parse_task(decode_json(raw, source=source, line=number), source=source, line=number,
                          limits=limits, base_dir=base_dir)
    except TaskValidationError as exc:
        return exc


def load_tasks(path: str | Path, *, limits: InputLimits | None = None) -> list[TaskInput]:
    """Load every task in a file; the first invalid one raises ``TaskValidationError``."""
    limits = limits or DEFAULT_LIMITS
    path = _open_checked(Path(path), limits)
    suffix = path.suffix.lower()
    if suffix == ".jsonl":
        tasks = []
        for _, item in iter_task_lines(path, limits=limits):
            if isinstance(item, TaskValidationError):
                raise item
            tasks.append(item)
        if not tasks:
            raise TaskValidationError("the file holds no tasks", field="(file)", source=str(path))
        return tasks
    if suffix not in (".json", ".yaml", ".yml"):
        raise TaskValidationError(f"unsupported file type {suffix!r} (use .json, .yaml or .jsonl)",
                                  field="(file)", source=str(path))
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise TaskValidationError(f"cannot read {path}: {exc.strerror}", field="(file)") from None
    return load_task_bytes(raw, suffix=suffix, source=str(path), limits=limits, base_dir=path.parent)


def load_task_bytes(raw: bytes, *, suffix: str, source: str, limits: InputLimits | None = None,
                    base_dir: str | Path | None = None) -> list[TaskInput]:
    """The tasks of a document already read (``suffix`` .json, .yaml/.yml or .jsonl says how to
    parse it): what ``load_tasks`` does after reading a file, for input that is no file (stdin).
    ``base_dir``: what relative repository paths are read against (the file's directory)."""
    import io

    limits = limits or DEFAULT_LIMITS
    if suffix == ".jsonl":
        tasks = []
        for number, line, size, _ in read_lines(io.BytesIO(raw), limits.max_file_bytes, digest=False):
            item = parse_raw_line(line, size=size, number=number, source=source, limits=limits, base_dir=base_dir)
            if isinstance(item, TaskValidationError):
                raise item
            tasks.append(item)
        if not tasks:
            raise TaskValidationError("the input holds no tasks", field="(file)", source=source)
        return tasks
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise TaskValidationError(f"not UTF-8 text (byte {exc.start}): binary or wrongly encoded input",
                                  field="(file)", source=source) from None
    root: Any = None
    if suffix == ".json":
        data = decode_json(text, source=source, line=None)
    else:
        data, root = _decode_yaml(text, source=source, limits=limits)
    items = data if isinstance(data, list) else [data]
    # Each item's node, where the document is YAML (its scalars' source text for text fields).
    nodes = list(getattr(root, "value", ())) if isinstance(data, list) else [root]
    if not items:
        raise TaskValidationError("the file holds no tasks", field="(file)", source=source)
    if len(items) > limits.max_trajectories:  # a list of tasks: bounded like a list of candidates
        raise TaskValidationError(f"{len(items)} tasks in one file; at most {limits.max_trajectories} "
                                  f"(use .jsonl for more)", field="(file)", source=source)
    return [parse_task(item, source=source, text=text if len(items) == 1 else None, limits=limits,
                       yaml_node=nodes[i] if i < len(nodes) else None, base_dir=base_dir)
            for i, item in enumerate(items)]
