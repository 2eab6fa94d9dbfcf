"""``report.html``: one self-contained page (inline SVG plots, inline CSS, no scripts, no links out).

Why self-contained: the page must open offline, years later, attached to a paper or a ticket.
The plots are drawn with matplotlib (the optional ``report`` extra) into SVG text and inlined;
fonts are turned into paths (``svg.fonttype = path``) so nothing is fetched to render them.

Plots: agreement with its 95 % interval per arm; cost vs agreement (model calls per run on the x
axis when a price is unknown, and the axis says so); repeat-change and order-flip rates; a
reliability diagram for the arms that report a probability for the option they chose; the judges'
bias (order flips, first-position wins and self-preference beside their chance level; length bias
with its interval), with a table of every bias figure and its n.
"""

from __future__ import annotations

import html
import io
import json
from pathlib import Path
from typing import Any, Sequence

from oracle._internal.safe_files import write_atomic
from oracle.comparison.records import RunRecord
from oracle.comparison.summary import CompareSummary
from oracle.comparison._table import COLUMNS, row

INSTALL_HINT = "the report needs matplotlib: pip install 'oracle-router[report]'"


def _pyplot() -> Any:
    try:
        import matplotlib
    except ImportError as exc:
        raise ImportError(INSTALL_HINT) from exc
    matplotlib.use("Agg", force=True)
    matplotlib.rcParams.update({"svg.fonttype": "path", "svg.hashsalt": "oracle-compare",
                                "font.size": 9, "figure.dpi": 100})
    import matplotlib.pyplot as plt

    return plt


def _svg(fig: Any) -> str:
    buf = io.StringIO()
    fig.savefig(buf, format="svg", bbox_inches="tight", metadata={"Date": None, "Creator": None})
    text = buf.getvalue()
    return text[text.index("<svg"):]


def _agreement_plot(plt: Any, summary: CompareSummary) -> str:
    arms = [(a, a.agreement) for a in summary.results if a.agreement is not None]
    fig, ax = plt.subplots(figsize=(6, 2.8))
    xs = range(len(arms))
    values = [v for _, v in arms]
    low = [v - a.agreement_ci95[0] if a.agreement_ci95 else 0.0 for a, v in arms]
    high = [a.agreement_ci95[1] - v if a.agreement_ci95 else 0.0 for a, v in arms]
    ax.bar(list(xs), values, color="#4c78a8", yerr=[low, high], capsize=4)
    ax.set_xticks(list(xs), [a.arm for a, _ in arms])
    ax.set_ylim(0, 1)
    ax.set_ylabel("agreement with labels")
    ax.set_title("Agreement per arm (bootstrap 95% interval over items)")
    plt.close(fig)
    return _svg(fig)


def _cost_plot(plt: Any, summary: CompareSummary) -> str:
    arms = [a for a in summary.results if a.agreement is not None]
    priced = all(a.cost_per_100_items_usd is not None for a in arms)
    fig, ax = plt.subplots(figsize=(6, 2.8))
    for a in arms:
        x = a.cost_per_100_items_usd if priced else (a.calls_per_run or 0.0)
        ax.scatter([x], [a.agreement], s=40)
        ax.annotate(a.arm, (x, a.agreement), textcoords="offset points", xytext=(5, 4))
    ax.set_ylim(0, 1)
    ax.set_xlabel("USD per 100 items" if priced
                  else "calls per run: model calls, sandbox runs for the verifier (a price is unknown)")
    ax.set_ylabel("agreement")
    ax.set_title("Cost vs agreement")
    plt.close(fig)
    return _svg(fig)


def _flip_plot(plt: Any, summary: CompareSummary) -> str:
    arms = summary.results
    fig, ax = plt.subplots(figsize=(6, 2.8))
    xs = list(range(len(arms)))
    rep = [a.repeat_change_rate or 0.0 for a in arms]
    flip = [a.order_flip_rate or 0.0 for a in arms]
    ax.bar([x - 0.2 for x in xs], rep, width=0.4, label="changed between repeats", color="#f58518")
    ax.bar([x + 0.2 for x in xs], flip, width=0.4, label="flipped under order reversal", color="#54a24b")
    ax.set_xticks(xs, [a.arm for a in arms])
    ax.set_ylim(0, 1)
    ax.set_ylabel("share of items")
    ax.legend(loc="upper right", fontsize=7)
    ax.set_title("Stability (n/a bars are drawn at 0: see the table)")
    plt.close(fig)
    return _svg(fig)


def _reliability_plot(plt: Any, summary: CompareSummary) -> str | None:
    arms = [a for a in summary.results if a.calibration]
    if not arms:
        return None
    fig, ax = plt.subplots(figsize=(4.2, 4.2))
    ax.plot([0, 1], [0, 1], linestyle="--", color="#999999", label="perfect calibration")
    for a in arms:
        ax.plot([b["mean_confidence"] for b in a.calibration], [b["accuracy"] for b in a.calibration],
                marker="o", label=f"{a.arm} ({sum(b['n'] for b in a.calibration)} verdicts)")
    ax.set_xlim(0, 1)
    ax.set_ylim(0, 1)
    ax.set_xlabel("probability of the chosen option")
    ax.set_ylabel("share correct")
    ax.legend(loc="upper left", fontsize=7)
    ax.set_title("Reliability diagram")
    plt.close(fig)
    return _svg(fig)


def _bias_arms(summary: CompareSummary) -> list[Any]:
    return [a for a in summary.results if a.bias is not None]


def _bias_plot(plt: Any, summary: CompareSummary) -> str | None:
    """Rates per judge arm (a bar not drawn: not computable, see the table) and length bias with its interval."""
    arms = _bias_arms(summary)
    if not arms:
        return None
    fig, (ax, bx) = plt.subplots(1, 2, figsize=(8.5, 2.8), gridspec_kw={"width_ratios": [3, 2]})
    fig.subplots_adjust(wspace=0.4)
    names = ("order_flip_rate", "first_position_rate", "self_preference")
    colors = ("#54a24b", "#e45756", "#72b7b2")
    xs = list(range(len(arms)))
    for k, (name, color) in enumerate(zip(names, colors)):
        for x, a in zip(xs, arms):
            rate = getattr(a.bias, name)
            pos = x + (k - 1) * 0.27
            if rate is None or rate.value is None:
                ax.text(pos, 0.02, "n/a", ha="center", fontsize=6, rotation=90, color="#666666")
                continue
            ax.bar([pos], [rate.value], width=0.25, color=color, label=name)
            ax.text(pos, rate.value + 0.02, f"{rate.value:.2f}", ha="center", fontsize=6)
            if rate.chance is not None:
                ax.plot([pos - 0.12, pos + 0.12], [rate.chance, rate.chance], color="#333333", linewidth=1)
    handles, labels = ax.get_legend_handles_labels()
    unique = dict(zip(labels, handles))
    if unique:
        ax.legend(list(unique.values()), list(unique.keys()), loc="upper right", fontsize=7)
    ax.set_xticks(xs, [a.arm for a in arms])
    ax.set_ylim(0, 1.1)
    ax.set_ylabel("share (line: chance)")
    ax.set_title("Judge bias (n/a: not computable)")
    for x, a in zip(xs, arms):
        lb = a.bias.length_bias
        if lb.value is None:
            continue
        err = ([[lb.value - lb.ci95[0]], [lb.ci95[1] - lb.value]] if lb.ci95 else None)
        bx.errorbar([x], [lb.value], yerr=err, fmt="o", capsize=4, color="#4c78a8")
    bx.axhline(0, color="#999999", linewidth=0.8, linestyle="--")
    bx.set_xticks(xs, [a.arm for a in arms])
    bx.set_xlim(-0.5, len(arms) - 0.5)
    bx.set_ylim(-1, 1)
    bx.set_ylabel("Spearman rho (95% interval)")
    bx.set_title("Length bias within label")
    plt.close(fig)
    return _svg(fig)


def _bias_table(summary: CompareSummary) -> str:
    esc = html.escape
    rows = []
    for a in _bias_arms(summary):
        b = a.bias
        cells = [a.arm]
        for rate in (b.order_flip_rate, b.first_position_rate, b.self_preference):
            if rate is None:
                cells.append("none (no candidate carries metadata.model)")
            else:
                chance = f", chance {rate.chance:.3f}" if rate.chance is not None else ""
                value = "n/a" if rate.value is None else f"{rate.value:.3f}"
                cells.append(f"{value} (n={rate.n}{chance})")
        lb = b.length_bias
        ci = f" [{lb.ci95[0]:.3f}, {lb.ci95[1]:.3f}]" if lb.ci95 else ""
        cells.append(("n/a" if lb.value is None else f"{lb.value:.3f}{ci}") + f" (n={lb.n}, {lb.items} items)")
        rows.append("<tr>" + "".join(f"<td>{esc(c)}</td>" for c in cells) + "</tr>")
    if not rows:
        return ""
    head = "".join(f"<th>{h}</th>" for h in ("arm", "order_flip_rate", "first_position_rate", "self_preference",
                                              "length_bias"))
    return (f"<h2>Judge bias</h2><table id=\"bias\"><thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody>"
            "</table><p>n/a: no evidence of that kind in these runs (never counted as 0). Sources: see "
            "<code>source</code> of each figure in summary.json.</p>")


def _labels_note(summary: CompareSummary) -> str:
    info = summary.labels
    if info is None:
        return ""
    esc = html.escape
    reasons = "".join(f"<li>{esc(r)}: {n}</li>" for r, n in info.excluded_reasons.items())
    gold = (f" The tests agree with the file's gold labels on {info.gold_agreement:.3f} of {info.gold_units} "
            "candidates." if info.gold_agreement is not None else "")
    return (f"<p id=\"label-source\"><b>Labels come from execution</b> (label_source: verifier): "
            f"{esc(info.description)}. "
            f"{info.items_labelled} items labelled ({info.candidates_labelled} candidates, {info.candidates_passed} "
            f"passed), {info.items_excluded} excluded; the verifier arm produced them and is not ranked.{gold}</p>"
            + (f"<ul>{reasons}</ul>" if reasons else ""))


_CSS = """
body{font-family:system-ui,-apple-system,'Segoe UI',sans-serif;margin:2em auto;max-width:1100px;color:#222}
table{border-collapse:collapse;font-size:13px;margin:1em 0}
th,td{border:1px solid #ccc;padding:3px 7px;text-align:right}th{background:#f2f2f2}
td:first-child,th:first-child{text-align:left}
.plots{display:flex;flex-wrap:wrap;gap:1.5em}.plot{flex:0 0 auto}
.plot svg{max-width:100%;height:auto}
code{background:#f6f6f6;padding:0 3px}
"""


def render_report(summary: CompareSummary, records: Sequence[RunRecord]) -> str:
    """The page as a string (no file I/O; ``write_report`` writes it)."""
    plt = _pyplot()
    plots = [("agreement", _agreement_plot(plt, summary)), ("cost", _cost_plot(plt, summary)),
             ("stability", _flip_plot(plt, summary))]
    reliability = _reliability_plot(plt, summary)
    if reliability is not None:
        plots.append(("reliability", reliability))
    bias = _bias_plot(plt, summary)
    if bias is not None:
        plots.append(("bias", bias))
    esc = html.escape
    head = "".join(f"<th>{esc(c)}</th>" for c in COLUMNS)
    body = "".join("<tr>" + "".join(f"<td>{esc(c)}</td>" for c in row(a)) + "</tr>" for a in summary.results)
    gap = summary.routing_gap
    gap_html = ""
    if gap is not None:
        gap_html = (f"<p>Routing gap (item-macro over {gap.items} items, no verdict counts 0): routed "
                    f"<b>{gap.routed}</b>, best single arm <b>{esc(str(gap.best_single_arm))}</b> "
                    f"{gap.best_single_arm_agreement}, per-item best arm (upper bound) <b>{gap.per_item_best}</b>.</p>")
    notes = []
    for a in summary.results:
        for reason, count in a.not_applicable_reasons.items():
            notes.append(f"<li><code>{esc(a.arm)}</code> n/a on {count} item(s): {esc(reason)}</li>")
        if a.routing_accuracy is not None:
            notes.append(f"<li>routing accuracy {a.routing_accuracy:.3f} over {a.routing_labelled} labelled items</li>")
    settings = {k: v for k, v in summary.model_dump(mode="json").items()
                if k not in ("results", "routing_gap", "labels", "label_arm")}
    figures = "".join(f'<div class="plot" id="plot-{name}">{svg}</div>' for name, svg in plots)
    return (
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
        "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
        f"<title>oracle compare: {summary.items} items</title><style>{_CSS}</style></head><body>"
        f"<h1>Evaluator comparison</h1><p>{summary.items} items, {len(records)} runs, arms "
        f"{esc(', '.join(summary.arms))}, repeats {summary.repeats}, orders {esc(', '.join(summary.orders))}, "
        f"seed {summary.seed}; source <code>{esc(str(summary.source))}</code>.</p>"
        f"{_labels_note(summary)}"
        f"<table id=\"arms\"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>{gap_html}"
        f"<ul>{''.join(notes)}</ul><div class=\"plots\">{figures}</div>{_bias_table(summary)}"
        f"<h2>Settings</h2><pre>{esc(json.dumps(settings, indent=2, sort_keys=True))}</pre>"
        "</body></html>\n")


def write_report(summary: CompareSummary, records: Sequence[RunRecord], path: Path) -> Path:
    """Render and write atomically; ImportError (with the install hint) without matplotlib."""
    text = render_report(summary, records)
    write_atomic(path, text)
    return path
