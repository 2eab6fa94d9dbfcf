"""Reading a rubric's ``index.json`` as untrusted input: every field checked, the layout unchanged.

The index is the one mutable file of a rubric (``current``, the sha256 of every release file, the
history of pointer moves) and anyone who can write the directory can edit it. Each way it can be
wrong (not JSON, nested or numbered past reason, a lone surrogate, a field of the wrong type, a
version key that is not a plain number, a pointer to a version it does not list) is
``RubricTampered`` naming the file and the field, so every command that reads it exits 2.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StrictInt, StrictStr, ValidationError

from oracle.rubrics.errors import RubricTampered
from oracle.rubrics.model import MAX_VERSION, VERSION_RE

MAX_INDEX_BYTES = 16 * 1024 * 1024
"""An index past this is not one the store wrote (a release adds about 200 bytes)."""

Version = Field(ge=1, le=MAX_VERSION)


class IndexEntry(BaseModel):
    """What the index records about one release file."""

    model_config = ConfigDict(extra="forbid", strict=True)
    sha256: StrictStr = Field(pattern=r"^[0-9a-f]{64}$")
    content_hash: StrictStr = Field(pattern=r"^[0-9a-f]{64}$")
    released_at: StrictStr = Field(max_length=64)


class PointerMove(BaseModel):
    """One promote or rollback of ``current``."""

    model_config = ConfigDict(extra="forbid", strict=True, populate_by_name=True)
    action: Literal["promote", "rollback"]
    from_: StrictInt | None = Field(alias="from", ge=1, le=MAX_VERSION)
    to: StrictInt | None = Field(ge=1, le=MAX_VERSION)
    at: StrictStr = Field(max_length=64)


class RubricIndex(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)
    current: StrictInt | None = Field(ge=1, le=MAX_VERSION)
    versions: dict[StrictStr, IndexEntry]
    pointer_history: list[PointerMove]


def _where(exc: ValidationError) -> str:
    err = exc.errors()[0]
    loc = ".".join(str(part) for part in err["loc"]) or "(index)"
    return f"{loc}: {err['msg']}"


def check_index(path: Path) -> dict[str, Any]:
    """The index at ``path`` as plain data (the shape the store writes back), after checking it."""
    from oracle._internal.safe_json import JsonInputError, loads_checked

    try:
        with open(path, "rb") as fh:
            raw = fh.read(MAX_INDEX_BYTES + 1)
    except OSError as exc:
        raise RubricTampered(f"{path}: cannot read the index: {exc.strerror}") from None
    if len(raw) > MAX_INDEX_BYTES:
        raise RubricTampered(f"{path}: index larger than {MAX_INDEX_BYTES} bytes: not one the store wrote")
    try:
        data = loads_checked(raw, max_depth=8)
    except JsonInputError as exc:
        raise RubricTampered(f"{path}: unreadable index: {exc}") from None
    if not isinstance(data, dict):
        raise RubricTampered(f"{path}: not a rubric index (an object with current, versions, pointer_history)")
    try:
        index = RubricIndex.model_validate(data)
    except ValidationError as exc:
        raise RubricTampered(f"{path}: not a rubric index: {_where(exc)}") from None
    for key in index.versions:
        if not VERSION_RE.fullmatch(key):
            raise RubricTampered(f"{path}: versions: key {ascii(key)[:40]} is not a release number")
    listed = {int(key) for key in index.versions}
    if index.current is not None and index.current not in listed:
        raise RubricTampered(f"{path}: current: v{index.current} is not among the released versions")
    for i, move in enumerate(index.pointer_history):
        for name, value in (("from", move.from_), ("to", move.to)):
            if value is not None and value not in listed:
                raise RubricTampered(f"{path}: pointer_history[{i}].{name}: v{value} is not a released version")
    return data
