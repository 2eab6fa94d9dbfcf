"""What candidates run with: a prepared interpreter, requirements built into a cached environment,
and (for JavaScript) a ``node_modules`` directory.

``Environment`` is plain, validated data: where it is on the task (``task.environment``) or in the
config (``verifier.environment``), the task's replaces the config's as a whole. Nothing here builds
or probes anything; the verifier does (oracle/sandbox/envcache.py builds, oracle/sandbox/
interpreters.py says whether the sandbox user can run an interpreter).

- ``python``: a path to an interpreter the user prepared (``/opt/venvs/np/bin/python``, a venv's or
  a system one), or a version (``"3.11"``) to look for among the interpreters the sandbox user can
  run. Left out: the interpreter the verifier uses anyway.
- ``requirements``: pip requirement strings (``"numpy>=2"``), installed once for that interpreter
  with the user's own pip configuration and reused by every later run.
- ``node_modules``: a directory mounted read-only for JavaScript candidates (``require`` finds it).
- ``install`` and ``pythonpath`` (repository tasks, ``task.repository``): how the candidate's tree is
  made importable. ``pythonpath`` (the default) puts the listed directories, relative to the
  repository root (default: the root), on ``PYTHONPATH``; ``editable`` runs the tree's build backend
  (``pip install -e``) inside the sandbox, per candidate tree. At their defaults they are left out of
  a task's content hash (``without_defaults``), so a task hashed before they existed keeps its hash.

Why the requirements are parsed here: a requirement is a cache key, so ``NumPy >= 2`` and
``numpy>=2`` must be one environment, and a string that is a pip option (``--index-url ...``,
``-r file``) must never reach pip's command line: the index belongs in pip's own configuration.
"""

from __future__ import annotations

import re
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from oracle.tasks.repository import relative_path_problem

MAX_REQUIREMENTS = 200
MAX_REQUIREMENT_CHARS = 500
_VERSION = re.compile(r"^3\.\d{1,3}(\.\d{1,3})?$")
DEFAULT_PYTHONPATH: tuple[str, ...] = (".",)
_DEFAULTS: dict[str, Any] = {"install": "pythonpath", "pythonpath": list(DEFAULT_PYTHONPATH)}
"""Fields added after environments were first hashed, with their defaults as they dump to JSON."""


def without_defaults(dumped: dict[str, Any]) -> dict[str, Any]:
    """An environment's JSON dump without the later fields that hold their defaults: what a content
    hash reads, so adding ``install``/``pythonpath`` moved no existing task's hash."""
    return {k: v for k, v in dumped.items() if not (k in _DEFAULTS and v == _DEFAULTS[k])}


def normalize_requirement(text: str) -> str:
    """One canonical spelling of a PEP 508 requirement (name lower-case with ``-``, extras sorted,
    specifiers sorted, no spaces); ValueError naming what is wrong."""
    from packaging.requirements import InvalidRequirement, Requirement
    from packaging.utils import canonicalize_name

    if not isinstance(text, str) or not text.strip():
        raise ValueError("an empty requirement")
    if len(text) > MAX_REQUIREMENT_CHARS:
        raise ValueError(f"a requirement longer than {MAX_REQUIREMENT_CHARS} characters")
    stripped = text.strip()
    if stripped.startswith("-"):
        raise ValueError(f"{stripped!r} is a pip option, not a requirement (set the index, find-links "
                         "and the like in pip's own configuration: pip.conf or PIP_* variables)")
    if "\n" in stripped or "\r" in stripped:
        raise ValueError(f"{stripped!r}: one requirement per list item")
    try:
        req = Requirement(stripped)
    except InvalidRequirement as exc:
        raise ValueError(f"{stripped!r} is not a valid requirement: {str(exc).splitlines()[0]}") from None
    out: str = canonicalize_name(req.name)
    if req.extras:
        out += "[" + ",".join(sorted(canonicalize_name(e) for e in req.extras)) + "]"
    if req.url:
        out += f" @ {req.url}"
        if req.marker:
            out += " "
    elif req.specifier:
        out += ",".join(sorted(str(s) for s in req.specifier))
    if req.marker:
        out += f"; {req.marker}"
    return out


class Environment(BaseModel):
    """The dependencies the task's candidates need (see module docstring)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    python: str | None = None
    """An interpreter path (absolute) or a version such as ``"3.11"``; None: the verifier's own."""
    requirements: tuple[str, ...] = Field(default=(), max_length=MAX_REQUIREMENTS)
    """pip requirements (PEP 508), built once into the environment cache for that interpreter."""
    node_modules: str | None = None
    """An absolute path to a ``node_modules`` directory for JavaScript candidates (read-only)."""
    install: Literal["pythonpath", "editable"] = "pythonpath"
    """How a repository task's tree is made importable: its ``pythonpath`` directories on
    ``PYTHONPATH``, or an editable install run inside the sandbox per candidate tree."""
    pythonpath: tuple[str, ...] = Field(default=DEFAULT_PYTHONPATH, min_length=1, max_length=100)
    """Directories relative to the repository root put on ``PYTHONPATH`` (``install: pythonpath``),
    e.g. ``["src"]``; default the root."""

    @field_validator("python")
    @classmethod
    def _python(cls, value: str | None) -> str | None:
        if value is None:
            return None
        if "/" in value:
            if not value.startswith("/"):
                raise ValueError(f"{value!r}: an interpreter path must be absolute (/path/to/bin/python)")
            if "\x00" in value or "\n" in value:
                raise ValueError("an interpreter path cannot hold NUL or newline characters")
            return value
        if not _VERSION.match(value):
            raise ValueError(f"{value!r} is neither an interpreter path (/path/to/bin/python) nor a "
                             "Python version such as '3.11'")
        return value

    @field_validator("requirements")
    @classmethod
    def _requirements(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        for i, text in enumerate(value):
            try:
                normalize_requirement(text)
            except ValueError as exc:
                raise ValueError(f"[{i}]: {exc}") from None
        return tuple(t.strip() for t in value)

    @field_validator("node_modules")
    @classmethod
    def _node_modules(cls, value: str | None) -> str | None:
        if value is None:
            return None
        if not value.startswith("/") or "\x00" in value or "\n" in value:
            raise ValueError(f"{value!r}: give the node_modules directory as an absolute path")
        return value.rstrip("/") or "/"

    @field_validator("pythonpath")
    @classmethod
    def _pythonpath(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        out = []
        for i, path in enumerate(value):
            path = path.rstrip("/") if isinstance(path, str) and path not in ("/", ".") else path
            if path == ".":
                out.append(path)
                continue
            problem = relative_path_problem(path)
            if problem:
                raise ValueError(f"[{i}]: {path!r} {problem}")
            out.append(path)
        return tuple(out)

    @model_validator(mode="after")
    def _not_empty(self) -> "Environment":
        later = "install" in self.model_fields_set or "pythonpath" in self.model_fields_set
        if not (self.python or self.requirements or self.node_modules or later):
            raise ValueError("an environment names at least one of python, requirements, node_modules, "
                             "install, pythonpath")
        if self.install == "editable" and "pythonpath" in self.model_fields_set:
            raise ValueError("pythonpath: applies to install: pythonpath; an editable install makes the "
                             "package importable by itself")
        return self

    @property
    def python_path(self) -> str | None:
        """``python`` when it is a path, else None."""
        return self.python if self.python and self.python.startswith("/") else None

    @property
    def python_version(self) -> str | None:
        """``python`` when it is a version, else None."""
        return self.python if self.python and not self.python.startswith("/") else None

    def normalized_requirements(self) -> list[str]:
        """The requirements in their canonical spelling, sorted, without duplicates (the cache key's)."""
        return sorted({normalize_requirement(r) for r in self.requirements})


__all__ = ["DEFAULT_PYTHONPATH", "MAX_REQUIREMENTS", "Environment", "normalize_requirement", "without_defaults"]
