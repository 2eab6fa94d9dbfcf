"""The table of a comparison as cells: one row per arm, the figures a paper's table reports.

Shared by the terminal table (oracle/cli/render.py) and the HTML report (oracle/comparison/_report.py),
so both show the same figures formatted the same way."""

from __future__ import annotations

from oracle.comparison.summary import ArmSummary
from oracle.results._cost import cost_text

COLUMNS = ("arm", "n", "n/a", "agreement [95% CI]", "kappa", "repeat chg", "order flips", "abst/unp/fail",
           "p50 ms", "p95 ms", "calls/run", "tokens", "$/100 items")


def _num(value: float | None, digits: int = 3) -> str:
    return "n/a" if value is None else f"{value:.{digits}f}"


def _rate(changed: int, total: int) -> str:
    return "n/a" if total == 0 else f"{changed}/{total}"


def row(a: ArmSummary) -> tuple[str, ...]:
    ci = f" [{a.agreement_ci95[0]:.2f}, {a.agreement_ci95[1]:.2f}]" if a.agreement_ci95 else ""
    tokens = ((a.input_tokens or 0) + (a.output_tokens or 0)
              if a.input_tokens is not None and a.output_tokens is not None else None)
    return (a.arm, str(a.n), str(a.not_applicable), _num(a.agreement) + ci, _num(a.kappa),
            _rate(a.repeat_changed, a.repeat_items), _rate(a.order_flipped, a.order_items),
            f"{a.abstained}/{a.unparsed}/{a.failed}", _num(a.latency_ms.get("p50"), 0),
            _num(a.latency_ms.get("p95"), 0), _num(a.calls_per_run, 2), "n/a" if tokens is None else str(tokens),
            cost_text(a.cost_per_100_items_usd, model_calls=0 if (a.runs and not a.models and
                                                                  a.cost_per_100_items_usd == 0) else None, digits=4))
