"""Where a repository task's code lives: a local git repository or a git bundle, at a base commit.

``task.repository`` is plain, validated data; nothing here opens the repository. The host side
(oracle/repo/) extracts the tree at ``commit`` once, and each candidate's patch is applied to a fresh
copy of it. A bundle is the portable form: a batch on another machine or a Ray worker needs only the
task file and the bundle.

Why the commit is checked here: it names the base every candidate is judged against, so a typo
(``HEAD~1``, a branch name, a tag) must fail at load naming ``task.repository.commit``, not after the
first candidate's tree was built from whatever that name points at today.
"""

from __future__ import annotations

import re

from pydantic import BaseModel, ConfigDict, field_validator, model_validator

_COMMIT = re.compile(r"^[0-9a-fA-F]{4,40}$")


def relative_path_problem(path: str) -> str | None:
    """Why ``path`` is not a plain path inside a tree (None when it is): relative, forward slashes,
    no empty, ``.`` or ``..`` part, no NUL or newline. Shared by ``subdir``, ``pythonpath`` and a
    trajectory's ``files``, which all name places inside the candidate's tree."""
    if not isinstance(path, str) or not path:
        return "is empty"
    if "\x00" in path or "\n" in path or "\r" in path:
        return "holds a NUL or newline character"
    if path.startswith("/"):
        return "is absolute; give a path relative to the repository root"
    parts = path.split("/")
    if ".." in parts:
        return "has a '..' part (it would leave the tree)"
    if any(p in ("", ".") for p in parts):
        return "has an empty or '.' part"
    return None


class Repository(BaseModel):
    """A git repository at a base commit: ``path`` (a local clone) or ``bundle`` (a ``git bundle`` file)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    path: str | None = None
    """A local git repository (its work tree or a bare repository)."""
    bundle: str | None = None
    """A file made by ``git bundle create`` holding ``commit``."""
    commit: str
    """The base commit, as a hexadecimal object name (4 to 40 digits; stored lower-case)."""
    subdir: str | None = None
    """The directory, relative to the repository root, where the tests run (a monorepo's package)."""

    @field_validator("path", "bundle")
    @classmethod
    def _location(cls, value: str | None) -> str | None:
        if value is None:
            return None
        if not value.strip():
            raise ValueError("an empty path")
        if "\x00" in value or "\n" in value or "\r" in value:
            raise ValueError("a path cannot hold NUL or newline characters")
        return value

    @field_validator("commit")
    @classmethod
    def _commit(cls, value: str) -> str:
        if not _COMMIT.match(value):
            raise ValueError(f"{value!r} is not a commit id: give 4 to 40 hexadecimal digits (a branch, tag or "
                             "HEAD~n moves; the base must not)")
        return value.lower()

    @field_validator("subdir")
    @classmethod
    def _subdir(cls, value: str | None) -> str | None:
        if value is None:
            return None
        value = value.rstrip("/") if value != "/" else value
        problem = relative_path_problem(value)
        if problem:
            raise ValueError(f"{value!r} {problem}")
        return value

    @model_validator(mode="after")
    def _one_source(self) -> "Repository":
        if (self.path is None) == (self.bundle is None):
            raise ValueError("path: give exactly one of path (a local git repository) or bundle (a git bundle file)")
        return self


__all__ = ["Repository", "relative_path_problem"]
