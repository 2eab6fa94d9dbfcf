"""Find the code a trajectory proposes, and make it runnable against the task.

Order: the trajectory's ``code`` field; else the fenced code blocks of the answer (the block that
defines the entry point, else the last complete one); else the answer itself when it parses as
code. A HumanEval-style completion (a function body only) is joined to the task's prompt; a full
definition gets the prompt prepended too, so imports and helper functions from the prompt exist.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass

from oracle.tasks.task import Task, Trajectory

SUPPORTED_LANGUAGES = ("python", "javascript")
_FENCE = re.compile(r"```[ \t]*([A-Za-z0-9_+.-]*)[^\n]*\n(.*?)(```|\Z)", re.DOTALL)
_LANG_ALIASES = {"py": "python", "python3": "python", "python": "python", "js": "javascript",
                 "javascript": "javascript", "node": "javascript", "nodejs": "javascript",
                 "mjs": "javascript", "cjs": "javascript"}


@dataclass(frozen=True)
class ExtractedCode:
    """The program to run, where it came from, and its language."""

    code: str | None
    source: str | None
    """code_field, fenced_block, answer, or None when nothing runnable was found."""
    language: str
    joined_prompt: bool = False


def normalize_language(name: str | None) -> str | None:
    if not name:
        return None
    return _LANG_ALIASES.get(name.strip().lower(), name.strip().lower())


def _defines(code: str, entry_point: str | None, language: str) -> bool:
    if not entry_point:
        return False
    ep = re.escape(entry_point)
    if language == "python":
        return re.search(rf"^\s*(async\s+)?def\s+{ep}\s*\(|^\s*{ep}\s*=", code, re.MULTILINE) is not None
    return re.search(rf"function\s*\*?\s*{ep}\s*\(|(const|let|var)\s+{ep}\s*=|^\s*{ep}\s*=", code,
                     re.MULTILINE) is not None


def _parses_as_python(text: str) -> bool:
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return False
    # A bare word or number ("yes", "42") parses too; only accept something that does work.
    return any(not (isinstance(n, ast.Expr) and isinstance(n.value, (ast.Name, ast.Constant)))
               for n in tree.body) and bool(tree.body)


def _prompt_is_code(prompt: str, entry_point: str) -> bool:
    """A HumanEval-style prompt: Python source (signature + docstring) defining the entry point."""
    if not _defines(prompt, entry_point, "python"):
        return False
    try:
        ast.parse(prompt)
    except (SyntaxError, ValueError):
        return False
    return True


def _looks_like_javascript(text: str) -> bool:
    return re.search(r"\bfunction\b|=>|\bconst\b|\blet\b|console\.log|module\.exports", text) is not None


def extract_code(trajectory: Trajectory, task: Task) -> ExtractedCode:
    """Pick the code to run (see module docstring); ``code=None`` when there is none."""
    language = normalize_language(task.language)
    code: str | None = None
    source: str | None = None
    if trajectory.code and trajectory.code.strip():
        code, source = trajectory.code, "code_field"
    else:
        blocks = [(normalize_language(m.group(1)), m.group(2), m.group(3) == "```")
                  for m in _FENCE.finditer(trajectory.answer or "")]
        if language:
            blocks = [b for b in blocks if b[0] in (None, language)] or blocks
        chosen = next((b for b in blocks if _defines(b[1], task.entry_point, b[0] or language or "python")),
                      None)
        if chosen is None:
            complete = [b for b in blocks if b[2] and b[1].strip()]
            chosen = complete[-1] if complete else None
        if chosen is not None:
            code, source = chosen[1], "fenced_block"
            language = language or chosen[0]
        elif trajectory.answer.strip():
            text = trajectory.answer
            body_only = bool(task.entry_point) and _prompt_is_code(task.prompt or "", task.entry_point)  # type: ignore[arg-type]
            if (language in (None, "python")) and (_parses_as_python(text) or (
                    body_only and _parses_as_python(task.prompt + text))):
                code, source, language = text, "answer", "python"
            elif language == "javascript" and _looks_like_javascript(text):
                code, source = text, "answer"
    language = language or "python"
    if code is None:
        return ExtractedCode(None, None, language)
    return _join_prompt(code, source, language, task)


def _join_prompt(code: str, source: str | None, language: str, task: Task) -> ExtractedCode:
    ep = task.entry_point
    if language != "python" or not ep or not _prompt_is_code(task.prompt or "", ep):
        return ExtractedCode(code, source, language)
    prompt = task.prompt
    if _defines(code, ep, language):
        return ExtractedCode(prompt.rstrip("\n") + "\n\n" + code, source, language, joined_prompt=True)
    # A body only: HumanEval's rule is prompt + completion.
    return ExtractedCode(prompt + code, source, language, joined_prompt=True)
