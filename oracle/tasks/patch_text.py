"""A candidate's change to a repository, read from its trajectory (pure: no I/O, no git).

The order, first that applies: the trajectory's ``patch`` (taken byte for byte: ``git apply``
decides what it means); its ``files``; the answer's fenced ``diff``/``patch`` blocks (several
blocks are one patch, in the order written: agents often give one block per file; when no block is
tagged, untagged blocks that hold a unified diff); an answer that is itself a unified diff (it starts
with ``diff --git``, or with a ``--- `` line followed by a ``+++ `` line); else nothing.

A patch that is empty or only whitespace, or an empty ``files``, is ``kind="none"``: a candidate
that changes nothing, judged like any other (its fail-to-pass tests fail), never refused. ``source``
says where the change came from, so a result can show that a patch was read out of prose.

Why fences are read strictly: a diff's context line may itself start with backticks (a Markdown
file's code fence, indented by the diff's one space), so only a fence at the opening fence's
indentation or less, with at least as many backticks and nothing after them, closes a block.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Literal, Protocol

ChangeKind = Literal["patch", "files", "none"]
ChangeSource = Literal["patch", "files", "answer", "none"]

PATCH_TAGS = frozenset({"diff", "patch"})
"""Info strings of a fenced block taken as the candidate's patch (the first word, case ignored)."""
_OPEN = re.compile(r"^( {0,3})(`{3,}|~{3,})[ \t]*([^`\s]*)[^`]*$")
_DIFF_START = re.compile(r"^(diff --git |--- )")
_LINE = re.compile(r"[^\n]*\n|[^\n]+\Z")
"""Lines as git sees them: ended by ``\n`` only (``str.splitlines`` also splits on ``\x85``,
``\u2028`` and the like, which would let a diff line's text close a fence)."""


class _HasChange(Protocol):
    """What this module reads of a trajectory (``oracle.tasks.task.Trajectory`` has it)."""

    answer: str
    patch: str | None
    files: dict[str, str] | None


@dataclass(frozen=True)
class CandidateChange:
    """The change a candidate proposes: a unified diff, whole files, or none."""

    kind: ChangeKind
    patch: str = ""
    """The unified diff (``kind="patch"``), else ``""``."""
    files: dict[str, str] = field(default_factory=dict)
    """Path relative to the repository root -> new content (``kind="files"``), else empty."""
    source: ChangeSource = "none"
    """Where it came from: the trajectory's ``patch`` or ``files`` field, its answer, or nowhere."""


def _blank(text: str) -> bool:
    return not text.strip()


def _fenced_blocks(answer: str) -> list[tuple[str, str]]:
    """Every fenced code block of ``answer`` as (tag, body); an unclosed block runs to the end."""
    lines = _LINE.findall(answer)
    blocks: list[tuple[str, str]] = []
    i = 0
    while i < len(lines):
        opened = _OPEN.match(lines[i].rstrip("\r\n"))
        if not opened:
            i += 1
            continue
        indent, fence, tag = len(opened.group(1)), opened.group(2), opened.group(3).lower()
        body: list[str] = []
        i += 1
        while i < len(lines):
            line = lines[i].rstrip("\r\n")
            stripped = line.lstrip(" ")
            if len(line) - len(stripped) <= indent and stripped.rstrip() and \
                    set(stripped.rstrip()) == {fence[0]} and len(stripped.rstrip()) >= len(fence):
                break
            body.append(lines[i])
            i += 1
        blocks.append((tag, "".join(body)))
        i += 1
    return blocks


def looks_like_diff(text: str) -> bool:
    """Whether ``text`` (leading blank lines aside) starts as a unified diff: ``diff --git``, or a
    ``--- `` line followed by a ``+++ `` line."""
    lines = text.lstrip("\r\n").split("\n")
    if not lines or not _DIFF_START.match(lines[0]):
        return False
    return lines[0].startswith("diff --git ") or (len(lines) > 1 and lines[1].startswith("+++ "))


def _with_newline(text: str) -> str:
    """A diff read from prose ends with a newline (``git apply`` calls a last line without one corrupt)."""
    return text if text.endswith("\n") else text + "\n"


def patch_from_answer(answer: str) -> str | None:
    """The patch an answer holds (see the module docstring), or None when it holds none; ``""`` when
    its diff blocks are all blank."""
    if "```" in answer or "~~~" in answer:
        blocks = _fenced_blocks(answer)
        tagged = [body for tag, body in blocks if tag in PATCH_TAGS]
        if not tagged:
            tagged = [body for tag, body in blocks if not tag and looks_like_diff(body)]
        if tagged:
            bodies = [body for body in tagged if not _blank(body)]
            return "".join(_with_newline(body) for body in bodies)
    if looks_like_diff(answer):
        return _with_newline(answer.lstrip("\r\n"))
    return None


def candidate_change(trajectory: _HasChange) -> CandidateChange:
    """The change ``trajectory`` proposes (module docstring: the order, and what counts as none)."""
    if trajectory.patch is not None:
        if _blank(trajectory.patch):
            return CandidateChange(kind="none", source="patch")
        return CandidateChange(kind="patch", patch=trajectory.patch, source="patch")
    if trajectory.files is not None:
        if not trajectory.files:
            return CandidateChange(kind="none", source="files")
        return CandidateChange(kind="files", files=dict(trajectory.files), source="files")
    found = patch_from_answer(trajectory.answer or "")
    if found is None:
        return CandidateChange(kind="none", source="none")
    if _blank(found):
        return CandidateChange(kind="none", source="answer")
    return CandidateChange(kind="patch", patch=found, source="answer")


__all__ = ["PATCH_TAGS", "CandidateChange", "ChangeKind", "ChangeSource", "candidate_change", "looks_like_diff",
           "patch_from_answer"]
