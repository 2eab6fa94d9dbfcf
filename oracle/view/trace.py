"""The routing trace drawn: each policy's vote and weight as bars, the totals, gates, confidence, fallback.

Bars are plain ``<div>`` widths (percent of the largest value of their kind), so the page draws
the same offline, in the export and without any script.
"""

from __future__ import annotations

import html
import json
from typing import Any


def _bar(value: float, top: float, cls: str, label: str) -> str:
    width = 0.0 if top <= 0 else max(0.0, min(100.0, 100.0 * value / top))
    return (f'<div class="barrow"><span class="barlabel">{html.escape(label)}</span>'
            f'<span class="bar {cls}" style="width:{width:.1f}%"></span>'
            f'<span class="barval">{value:.3g}</span></div>')


def section(route: dict[str, Any] | None) -> str:
    esc = html.escape
    if not route:
        return '<section id="route"><h2>Routing trace</h2><p class="muted">No route in this result.</p></section>'
    votes = [v for v in route.get("votes") or [] if isinstance(v, dict)]
    top_weight = max([float(v.get("weight") or 0) for v in votes] + [0.0])
    rows = []
    for v in votes:
        scores = v.get("scores") or {}
        bars = "".join(_bar(float(s or 0), 1.0, "score", str(name)) for name, s in sorted(scores.items()))
        rows.append(f'<div class="vote" data-policy="{esc(str(v.get("policy")))}"><h4>{esc(str(v.get("policy")))}'
                    f' <span class="muted">v{esc(str(v.get("version") or ""))}</span></h4>'
                    f'{_bar(float(v.get("weight") or 0), top_weight, "weight", "weight")}{bars}'
                    f'<p class="reason">{esc(str(v.get("reason") or ""))}</p></div>')
    totals = route.get("totals") or {}
    top_total = max([float(t or 0) for t in totals.values()] + [0.0])
    total_bars = "".join(_bar(float(t or 0), top_total, "total", str(name)) for name, t in sorted(totals.items()))
    gates = "".join(f'<li class="{"ok" if g.get("feasible") else "no"}">{esc(str(g.get("evaluator")))}: '
                    f'{"feasible" if g.get("feasible") else "not feasible"} ({esc(str(g.get("reason")))})</li>'
                    for g in route.get("gates") or [] if isinstance(g, dict))
    confidence = float(route.get("confidence") or 0)
    threshold = float(route.get("threshold") or 0)
    meter = (f'<div class="meter"><span class="fill" style="width:{100 * min(1.0, confidence):.1f}%"></span>'
             f'<span class="mark" style="left:{100 * min(1.0, threshold):.1f}%" title="threshold"></span></div>')
    facts = [("evaluator", route.get("evaluator") or "none"), ("confidence", f"{confidence:.3f}"),
             ("threshold", f"{threshold:.3f}"), ("low confidence", route.get("low_confidence")),
             ("runner-up", route.get("runner_up")), ("margin", route.get("margin")),
             ("fallback", route.get("fallback") or "none"), ("override", route.get("override")),
             ("config hash", route.get("config_hash"))]
    fact_rows = "".join(f"<tr><th>{esc(k)}</th><td>{esc(str(v))}</td></tr>" for k, v in facts)
    signals = "".join(f"<tr><th>{esc(str(k))}</th><td>{esc(json.dumps(v))}</td></tr>"
                      for k, v in sorted((route.get("signals") or {}).items()))
    abstained = ", ".join(esc(str(p)) for p in route.get("abstained") or []) or "none"
    return (f'<section id="route"><h2>Routing trace</h2><div class="cols"><div>'
            f'<table class="facts" id="route-facts">{fact_rows}</table>{meter}'
            f'<h3>Gates</h3><ul class="gates">{gates}</ul><h3>Totals</h3>{total_bars}</div>'
            f'<div><h3>Votes</h3>{"".join(rows) or "<p class=muted>no votes</p>"}'
            f'<p class="muted">Abstained: {abstained}</p></div></div>'
            f'<details><summary>Signals</summary><table class="facts" id="signals">{signals}</table></details>'
            f'</section>')
