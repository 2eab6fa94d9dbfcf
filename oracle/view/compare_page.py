"""A compare folder: the summary table, the report's plots, and the items behind each disagreement.

A disagreement is an item on which the arms that judged it (status not ``n/a``; the baseline too) gave different
verdicts (top candidate, per-candidate pass, chosen options), or on which one arm changed its
verdict between repeats or orders. Each links to the item's page: every arm's records side by side.
The plots are the report's own SVG, shown as images (``data:`` URIs): a picture cannot run script.
"""

from __future__ import annotations

import base64
import html
import json
from collections import defaultdict
from typing import Any, Callable

from oracle.view.catalog import CompareFolder

esc = html.escape
COLUMNS = ("arm", "n", "coverage", "agreement", "kappa", "order_flip_rate", "repeat_change_rate", "abstained",
           "unparsed", "failed", "cost_usd", "calls")


def _cell(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.3g}"
    return esc("–" if value is None else str(value))


def _signature(record: dict[str, Any]) -> str:
    status = record.get("status")
    return json.dumps([status if status == "failed" else "", record.get("top"),
                       sorted((record.get("passed") or {}).items()), sorted((record.get("chosen") or {}).items())],
                      default=str)


def disagreements(folder: CompareFolder) -> dict[str, list[str]]:
    """Item id -> what disagreed (``arms`` and/or ``ARM changed``), for the items with any disagreement."""
    by_item: dict[str, dict[str, set[str]]] = defaultdict(lambda: defaultdict(set))
    for r in folder.records:
        if r.get("status") == "n/a":
            continue
        by_item[str(r["item_id"])][str(r["arm"])].add(_signature(r))
    out: dict[str, list[str]] = {}
    for item, arms in by_item.items():
        why = [f"{arm} changed between repeats or orders" for arm, sigs in sorted(arms.items()) if len(sigs) > 1]
        firsts = {min(sigs) for sigs in arms.values()}
        if len(arms) > 1 and len(firsts) > 1:
            why.insert(0, "arms disagree: " + ", ".join(sorted(arms)))
        if why:
            out[item] = why
    return out


def render(folder: CompareFolder, link: Callable[[str, str], str]) -> str:
    summary = folder.summary or {}
    head = "".join(f"<th>{esc(c)}</th>" for c in COLUMNS)
    body = "".join("<tr>" + "".join(f"<td>{_cell(arm.get(c))}</td>" for c in COLUMNS) + "</tr>"
                   for arm in summary.get("results") or [] if isinstance(arm, dict))
    table = (f'<table id="arms"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>' if body
             else '<p class="muted">No summary.json in this folder.</p>')
    plots = "".join(f'<figure class="plot" id="plot-{esc(name)}"><img alt="{esc(name)}" src="data:image/svg+xml;'
                    f'base64,{base64.b64encode(svg.encode()).decode()}"><figcaption>{esc(name)}</figcaption></figure>'
                    for name, svg in folder.plots.items())
    found = disagreements(folder)
    items = "".join(f'<li><a class="item-link" href="{esc(link("item", folder.key + "/" + item))}">{esc(item)}</a>: '
                    f'{esc("; ".join(why))}</li>' for item, why in sorted(found.items()))
    meta = ", ".join(f"{k} {esc(str(summary.get(k)))}" for k in ("items", "repeats", "orders", "seed", "config_hash")
                     if k in summary)
    return (f'<article class="compare"><h1>Comparison {esc(folder.path)}</h1><p class="muted">{meta}</p>'
            f'<h2>Summary</h2>{table}<h2>Plots</h2>{plots or "<p class=muted>no report.html plots</p>"}'
            f'<h2>Disagreements ({len(found)})</h2><ul id="disagreements">{items or "<li>none</li>"}</ul></article>')


def render_item(folder: CompareFolder, item_id: str, task_links: list[str]) -> str:
    """Every arm's records for one item: what each said, in each repeat and order."""
    cols = ("arm", "repeat", "order", "status", "evaluator", "top", "passed", "chosen", "confidence", "scores",
            "reason", "error")
    rows = [r for r in folder.records if str(r.get("item_id")) == item_id]
    def cell(value: Any) -> str:
        return esc(json.dumps(value, default=str)) if isinstance(value, (dict, list)) else _cell(value)

    body = "".join("<tr>" + "".join(f"<td>{cell(r.get(c))}</td>" for c in cols) + "</tr>" for r in rows)
    why = disagreements(folder).get(item_id, [])
    links = "".join(f'<li><a href="{esc(h)}">result page</a></li>' for h in task_links)
    return (f'<article class="compare-item"><h1>{esc(item_id)}</h1><p>{esc("; ".join(why) or "no disagreement")}</p>'
            f'{"<ul>" + links + "</ul>" if links else ""}<table id="records"><thead><tr>'
            + "".join(f"<th>{c}</th>" for c in cols) + f"</tr></thead><tbody>{body}</tbody></table></article>")
