"""Untrusted text in a prompt: enclosed in a block it cannot close, escape or add to.

Both judges put candidate text (and task text) into the prompts they send; this module is the one
way they do it. ``enclose`` wraps a text in a block whose boundary is derived from the text itself
(sha256 over kind, label and text: a text cannot contain the boundary of the block it sits in
without containing its own hash), and ``escape_material`` turns every tag-like sequence inside
into an entity, so no closing or opening tag, of any name, survives: a ``<`` or a look-alike
(``LESS_THAN_FORMS``: fullwidth, small, angle brackets, modifier and canadian-syllabics forms)
followed by optional whitespace and a ``/`` (or look-alike) or a letter. ``inline`` is for short
text placed on one of our own lines (an option name): escaped, and with every line break made a
space, so it cannot start a line of its own (a fake question, section or option).
"""

from __future__ import annotations

import hashlib
import re

LESS_THAN_FORMS = "<\uff1c\ufe64\u2039\u3008\u2329\u27e8\u276c\u276e\u02c2\u1438\u2a7d\u29fc\u22d6\u2264\u227a"
"""``<`` and the characters a reader takes for it (Unicode confusables and NFKC forms of ``<``)."""
SLASH_FORMS = "/\uff0f\u2215\u2044\u29f8\u2571\u27cb\u3033\u30ce\u4e3f"
"""``/`` and its look-alikes: a closing tag written with any of them is still a closing tag."""

_TAG_LIKE = re.compile(rf"[{re.escape(LESS_THAN_FORMS)}](?=\s*(?:[{re.escape(SLASH_FORMS)}]|[^\W\d_]))")
_LINE_BREAKS = re.compile(r"[\n\r\v\f\x1c\x1d\x1e\x85\u2028\u2029]")
_LABEL = re.compile(r"[A-Za-z0-9_.:-]{1,64}")


def _entity(match: re.Match[str]) -> str:
    ch = match.group(0)
    return "&lt;" if ch == "<" else f"&#x{ord(ch):x};"


def escape_material(text: str) -> str:
    """Every tag-like ``<`` (or look-alike) becomes an entity; nothing else changes."""
    return _TAG_LIKE.sub(_entity, text)


def inline(text: str) -> str:
    """Short untrusted text for one of our own lines: escaped, line breaks made spaces."""
    return _LINE_BREAKS.sub(" ", escape_material(text))


def enclose(kind: str, text: str, label: str | None = None) -> str:
    """``text`` in a ``<kind id="label" boundary="...">`` block ending at the line that repeats the
    boundary. ``kind`` and ``label`` are ours (identifiers), never candidate text."""
    if not re.fullmatch(r"[a-z_]{1,32}", kind) or (label is not None and not _LABEL.fullmatch(label)):
        raise ValueError(f"enclose: kind {kind!r} and label {label!r} must be plain identifiers")
    boundary = hashlib.sha256(f"{kind}\0{label}\0{text}".encode("utf-8", "surrogatepass")).hexdigest()[:16]
    attrs = f' id="{label}"' if label else ""
    return f'<{kind}{attrs} boundary="{boundary}">\n{escape_material(text)}\n</{kind} boundary="{boundary}">'
