"""The viewer's pages as HTML, the same for the server and the export; only the links differ by mode."""

from __future__ import annotations

import html
from typing import Callable

from oracle.view import compare_page, shell, task_page
from oracle.view.catalog import Catalog

Link = Callable[[str, str], str]


def served_link(kind: str, key: str) -> str:
    return f"/{kind}/{key}"


def export_link(kind: str, key: str) -> str:
    return f"#/{kind}/{key}"


def nav(catalog: Catalog, link: Link, home: str) -> str:
    parts = [f'<a href="{home}">Tasks ({len(catalog.entries)})</a>']
    parts += [f'<a href="{html.escape(link("compare", c.key))}">compare {html.escape(c.path)}</a>'
              for c in catalog.compares]
    if catalog.store_path:
        parts.append(f'<span>store {html.escape(catalog.store_path)}</span>')
    return "".join(parts)


def task_body(catalog: Catalog, key: str, *, answerable: bool) -> str | None:
    entry = catalog.entry(key)
    return None if entry is None else task_page.render(entry, answerable=answerable)


def compare_body(catalog: Catalog, key: str, link: Link) -> str | None:
    folder = next((c for c in catalog.compares if c.key == key), None)
    return None if folder is None else compare_page.render(folder, link)


def item_body(catalog: Catalog, key: str, link: Link) -> str | None:
    """``key`` is ``COMPARE_KEY/ITEM_ID``: one item's records, with links to its result rows."""
    compare_key, _, item_id = key.partition("/")
    folder = next((c for c in catalog.compares if c.key == compare_key), None)
    if folder is None or not any(str(r.get("item_id")) == item_id for r in folder.records):
        return None
    return compare_page.render_item(folder, item_id, [link("task", e.key) for e in catalog.by_task_id(item_id)])


def list_page_body() -> str:
    return shell.LIST
