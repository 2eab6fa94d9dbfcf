"""Explicit bounds on task input, so hostile or careless files fail fast with a clear error.

Why limits at all: every one of these inputs used to reach an internal error or a hang — a
64-level-deep JSON array is harmless, a 100,000-level one blew the interpreter's stack; a YAML file
of a few hundred bytes whose aliases expand into billions of nodes grew to gigabytes once pydantic
copied it. A bound checked before the expensive step turns each of those into exit 2 naming the
limit and how to raise it. The defaults are far above any real task and live here, once. The check
of decoded data against ``max_depth`` (and for huge integers, lone surrogates) is
``oracle._internal.decoded.input_problem``, shared with the stores that read JSON back.
"""

from __future__ import annotations

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
