"""Read task files (.json, .yaml/.yml, .jsonl) into validated ``TaskInput`` objects.

Errors name the field (pydantic's location, dotted) and the file line, so a user can fix a
thousand-line JSONL file without guessing. A JSONL line is its own record; for JSON and YAML the
line of the offending key is looked up in the document's node tree.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Iterator

import yaml
from pydantic import ValidationError

from oracle.errors import TaskValidationError
from oracle.task import TaskInput


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
                and part in {"assert", "call", "io", "check"}:
            continue
        out.append(part)
    return tuple(out)


def _line_of(node: Any, loc: tuple[Any, ...]) -> int | None:
    """Follow ``loc`` through a YAML node tree; return the 1-based line of the deepest match."""
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


def format_validation_error(exc: ValidationError, *, source: str | None, line: int | None,
                            text: str | None = None) -> TaskValidationError:
    """Turn pydantic's error into one readable message naming every bad field."""
    first_field = None
    parts = []
    node = None
    if text is not None and line is None:
        try:
            node = yaml.compose(text)
        except yaml.YAMLError:
            node = None
    first_line = line
    for err in exc.errors():
        loc = _clean_loc(tuple(err["loc"]))
        field = _dotted(loc) or "(root)"
        first_field = first_field or field
        where = ""
        if node is not None:
            found = _line_of(node, loc)
            if found is not None:
                where = f" (line {found})"
                first_line = first_line or found
        msg = err["msg"]
        if err["type"] == "extra_forbidden":
            msg = "unknown key"
        parts.append((field, msg, where))
    if len(parts) == 1:  # the line is already in the message prefix
        parts = [(field, msg, "") for field, msg, _ in parts]
    return TaskValidationError("; ".join(f"{f}: {m}{w}" for f, m, w in parts), field=first_field,
                               line=first_line, source=source)


def parse_task(data: Any, *, source: str | None = None, line: int | None = None,
               text: str | None = None) -> TaskInput:
    """Validate one decoded task object."""
    if not isinstance(data, dict):
        raise TaskValidationError("expected an object with 'task' and 'trajectories'", field="(root)",
                                  line=line, source=source)
    try:
        return TaskInput.model_validate(data)
    except ValidationError as exc:
        raise format_validation_error(exc, source=source, line=line, text=text) from None


def iter_task_lines(path: str | Path) -> Iterator[tuple[int, TaskInput | TaskValidationError]]:
    """Yield (line number, task or the error for that line) for every non-blank JSONL line.

    Errors are yielded, not raised, so a batch can give every input line its own result row.
    """
    path = Path(path)
    with path.open("r", encoding="utf-8") as fh:
        for number, raw in enumerate(fh, start=1):
            if not raw.strip():
                continue
            try:
                data = json.loads(raw)
            except json.JSONDecodeError as exc:
                yield number, TaskValidationError(f"invalid JSON: {exc.msg} at column {exc.colno}",
                                                  field="(line)", line=number, source=str(path))
                continue
            try:
                yield number, parse_task(data, source=str(path), line=number)
            except TaskValidationError as exc:
                yield number, exc


def load_tasks(path: str | Path) -> list[TaskInput]:
    """Load every task in a file; the first invalid one raises ``TaskValidationError``."""
    path = Path(path)
    if not path.exists():
        raise TaskValidationError(f"no such file: {path}", field="(file)")
    suffix = path.suffix.lower()
    if suffix == ".jsonl":
        tasks = []
        for _, item in iter_task_lines(path):
            if isinstance(item, TaskValidationError):
                raise item
            tasks.append(item)
        if not tasks:
            raise TaskValidationError("the file holds no tasks", field="(file)", source=str(path))
        return tasks
    text = path.read_text(encoding="utf-8")
    try:
        if suffix in (".yaml", ".yml"):
            data = yaml.safe_load(text)
        elif suffix == ".json":
            data = json.loads(text)
        else:
            raise TaskValidationError(f"unsupported file type {suffix!r} (use .json, .yaml or .jsonl)",
                                      field="(file)", source=str(path))
    except json.JSONDecodeError as exc:
        raise TaskValidationError(f"invalid JSON: {exc.msg}", field="(file)", line=exc.lineno,
                                  source=str(path)) from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        raise TaskValidationError(f"invalid YAML: {exc}", field="(file)",
                                  line=(mark.line + 1) if mark else None, source=str(path)) from None
    items = data if isinstance(data, list) else [data]
    if not items:
        raise TaskValidationError("the file holds no tasks", field="(file)", source=str(path))
    return [parse_task(item, source=str(path), text=text if len(items) == 1 else None)
            for item in items]
