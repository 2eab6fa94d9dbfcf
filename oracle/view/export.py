"""``oracle view --export out.html``: the same pages in one self-contained file, to attach to a pull request.

The list rows travel as an embedded JSON block, every task, compare and item page as a
``<template>``; the one script shows them by the address's ``#/task/KEY`` part. Nothing is fetched:
the file works from disk, offline. Answering is left out (a file has no store behind it).
"""

from __future__ import annotations

import html
import json
from pathlib import Path

from oracle.view import pages, shell
from oracle.view.catalog import Catalog


def _json_block(value: object) -> str:
    """JSON that cannot end its ``<script>`` block early (every ``<`` escaped)."""
    return json.dumps(value, separators=(",", ":")).replace("<", "\\u003c")


def render(catalog: Catalog) -> str:
    link = pages.export_link
    templates = []
    for entry in catalog.entries:
        templates.append(f'<template id="page-task-{html.escape(entry.key)}">'
                         f'{pages.task_body(catalog, entry.key, answerable=False)}</template>')
    for folder in catalog.compares:
        templates.append(f'<template id="page-compare-{html.escape(folder.key)}">'
                         f'{pages.compare_body(catalog, folder.key, link)}</template>')
        for item in sorted({str(r.get("item_id")) for r in folder.records}):
            key = f"{folder.key}/{item}"
            templates.append(f'<template id="page-item-{html.escape(key)}">{pages.item_body(catalog, key, link)}'
                             '</template>')
    rows = _json_block([e.list_row() for e in catalog.entries])
    body = (f'{pages.list_page_body()}<section id="page" hidden></section>'
            f'<script type="application/json" id="rows-data">{rows}</script>{"".join(templates)}')
    return shell.page("oracle view (export)", body, mode="export", nav=pages.nav(catalog, link, "#"),
                      script=shell.JS)


def write(catalog: Catalog, out: str | Path) -> Path:
    path = Path(out)
    path.write_text(render(catalog), encoding="utf-8")
    return path
