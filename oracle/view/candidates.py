"""Candidates side by side: answer, code or patch, highlighted, and the diff of each against the best.

Highlighting is pygments' (server-side, inline styles, so the page needs no stylesheet of its
own for it) when pygments is installed (the ``view`` extra); without it the code is shown plain.
Diffs are difflib's unified diff, one line per ``<span>`` so added and removed lines are coloured.
"""

from __future__ import annotations

import difflib
import html
from typing import Any

MAX_DIFFS = 6
"""Diffs shown per task (each candidate against the first best one), so a 30-candidate task stays readable."""
MAX_CODE_CHARS = 200_000


def code_of(trajectory: dict[str, Any]) -> tuple[str, str]:
    """(kind, text) of what a candidate submitted: its patch, its code, else its answer."""
    for kind in ("patch", "code"):
        value = trajectory.get(kind)
        if isinstance(value, str) and value.strip():
            return kind, value
    files = trajectory.get("files")
    if isinstance(files, dict) and files:
        return "code", "\n".join(f"# --- {name}\n{text}" for name, text in sorted(files.items()))
    return "answer", str(trajectory.get("answer") or "")


def highlight(text: str, kind: str, language: str | None) -> str:
    """The text as HTML: pygments-highlighted code or patch when pygments is there, else escaped."""
    text = text[:MAX_CODE_CHARS]
    if kind == "answer":
        return f'<pre class="answer">{html.escape(text)}</pre>'
    try:
        from pygments import highlight as run
        from pygments.formatters import HtmlFormatter
        from pygments.lexers import get_lexer_by_name
        from pygments.util import ClassNotFound
    except ImportError:
        return f'<pre class="code">{html.escape(text)}</pre>'
    try:
        lexer = get_lexer_by_name("diff" if kind == "patch" else (language or "python"))
    except ClassNotFound:
        return f'<pre class="code">{html.escape(text)}</pre>'
    return run(text, lexer, HtmlFormatter(noclasses=True, nowrap=False, cssclass="code hl"))


def diff(a_name: str, a: str, b_name: str, b: str) -> str:
    """A unified diff of two candidates' submissions as HTML (``+`` and ``-`` lines marked)."""
    lines = difflib.unified_diff(a.splitlines(), b.splitlines(), fromfile=a_name, tofile=b_name, lineterm="", n=2)
    out = []
    for line in lines:
        cls = ("add" if line.startswith("+") and not line.startswith("+++") else
               "del" if line.startswith("-") and not line.startswith("---") else
               "hunk" if line.startswith("@@") else "ctx")
        out.append(f'<span class="{cls}">{html.escape(line)}</span>')
    return '<pre class="diff">' + ("".join(out) if out else "(identical)") + "</pre>"


def section(item: dict[str, Any] | None, evaluation: dict[str, Any] | None) -> str:
    """The candidates section: one column per candidate, then the diffs against the best."""
    esc = html.escape
    if not item:
        return ('<section id="candidates"><h2>Candidates</h2><p class="muted">The task input is not in the files '
                'given: pass its task file (or the escalation store) to <code>oracle view</code> to see the '
                'prompt and the candidates.</p></section>')
    task = item.get("task") or {}
    language = task.get("language") if isinstance(task.get("language"), str) else None
    verdicts = {c.get("id"): c for c in (evaluation or {}).get("candidates") or []}
    best = list((evaluation or {}).get("best") or [])
    cols = []
    subs: list[tuple[str, str]] = []
    for traj in item.get("trajectories") or []:
        cid = str(traj.get("id"))
        kind, text = code_of(traj)
        subs.append((cid, text))
        verdict = verdicts.get(cid) or {}
        score = verdict.get("score")
        badge = ("pass" if verdict.get("passed") is True else "fail" if verdict.get("passed") is False else "none")
        answer = ""
        if kind != "answer" and traj.get("answer"):
            answer = f'<pre class="answer">{esc(str(traj["answer"]))}</pre>'
        cols.append(
            f'<div class="cand{" best" if cid in best else ""}" data-candidate="{esc(cid)}">'
            f'<h3>{esc(cid)} <span class="badge {badge}">{badge}</span>'
            f'{" <span class=badge>best</span>" if cid in best else ""}'
            f'<span class="score">{"" if score is None else f"score {score:.3g}"}</span></h3>'
            f'{answer}<div class="kind">{esc(kind)}</div>{highlight(text, kind, language)}</div>')
    diffs = ""
    if len(subs) > 1:
        base = next((s for s in subs if s[0] in best), subs[0])
        shown = [diff(base[0], base[1], name, text) for name, text in subs if name != base[0]][:MAX_DIFFS]
        diffs = f'<h3>Diffs against {esc(base[0])}</h3>' + "".join(shown)
    return (f'<section id="candidates"><h2>Candidates</h2><div class="side">{"".join(cols)}</div>'
            f'{diffs}</section>')
