"""The terminal table of a comparison: one row per arm, the figures a paper's table reports."""

from __future__ import annotations

from oracle.comparison.summary import ArmSummary, CompareSummary

COLUMNS = ("arm", "n", "n/a", "agreement [95% CI]", "kappa", "repeat chg", "order flips", "abst/unp/fail",
           "p50 ms", "p95 ms", "calls/run", "tokens", "$/100 items")


def _num(value: float | None, digits: int = 3) -> str:
    return "n/a" if value is None else f"{value:.{digits}f}"


def _rate(changed: int, total: int) -> str:
    return "n/a" if total == 0 else f"{changed}/{total}"


def row(a: ArmSummary) -> tuple[str, ...]:
    ci = f" [{a.agreement_ci95[0]:.2f}, {a.agreement_ci95[1]:.2f}]" if a.agreement_ci95 else ""
    tokens = (a.input_tokens or 0) + (a.output_tokens or 0) if a.input_tokens is not None and a.output_tokens is not None else None
    return (a.arm, str(a.n), str(a.not_applicable), _num(a.agreement) + ci, _num(a.kappa),
            _rate(a.repeat_changed, a.repeat_items), _rate(a.order_flipped, a.order_items),
            f"{a.abstained}/{a.unparsed}/{a.failed}", _num(a.latency_ms.get("p50"), 0),
            _num(a.latency_ms.get("p95"), 0), _num(a.calls_per_run, 2), "n/a" if tokens is None else str(tokens),
            "n/a" if a.cost_per_100_items_usd is None else f"{a.cost_per_100_items_usd:.4f}")


def render_table(summary: CompareSummary) -> str:
    rows = [COLUMNS] + [row(a) for a in summary.results]
    widths = [max(len(r[i]) for r in rows) for i in range(len(COLUMNS))]
    lines = ["  ".join(cell.ljust(w) for cell, w in zip(r, widths)).rstrip() for r in rows]
    lines.insert(1, "  ".join("-" * w for w in widths))
    out = [f"{summary.items} items, repeats={summary.repeats}, orders={','.join(summary.orders)}, seed={summary.seed}",
           *lines]
    gap = summary.routing_gap
    if gap is not None:
        out.append(f"routing (item-macro over {gap.items} items): routed {_num(gap.routed)}, best single arm "
                   f"{gap.best_single_arm} {_num(gap.best_single_arm_agreement)}, per-item best {_num(gap.per_item_best)}")
    for a in summary.results:
        if a.routing_accuracy is not None:
            out.append(f"routing accuracy: {a.routing_accuracy:.3f} over {a.routing_labelled} labelled items "
                       f"(routes: {', '.join(f'{k} {v}' for k, v in a.routes.items())})")
    for a in summary.results:
        for reason, count in a.not_applicable_reasons.items():
            out.append(f"n/a {a.arm} x{count}: {reason}")
    if any(a.cost_per_100_items_usd is None and a.runs for a in summary.results):
        out.append("$/100 items n/a: a price is unknown (providers.prices), so the cost is unknown, not 0")
    return "\n".join(out)
