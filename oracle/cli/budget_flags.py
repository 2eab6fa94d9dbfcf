"""``--max-cost-usd`` and ``--max-calls``: the same two flags on evaluate, batch, compare and calibrate.

One budget for the whole command (every model request it sends, retries included; cache hits
free), checked before each request (oracle/providers/budget.py)."""

from __future__ import annotations

import argparse
import math
import sys
from typing import Any

from oracle.errors import TaskValidationError


def add_budget_flags(p: argparse.ArgumentParser) -> None:
    group = p.add_argument_group("budget", "stop before a model request would exceed it; what was not run is "
                                           "skipped (reason budget), and a rerun with a larger budget runs it")
    group.add_argument("--max-cost-usd", type=float, metavar="USD",
                       help="at most this many USD of model calls (estimated from the price table before each "
                            "request, charged at the reply's actual cost); a model with no known price is "
                            "refused up front")
    group.add_argument("--max-calls", type=int, metavar="N",
                       help="at most N model requests (every attempt counts, retries included; cache hits do not)")


def budget_from(args: argparse.Namespace) -> Any:
    """The ``Budget`` the flags ask for, or None; a bad value is bad input naming the flag."""
    cost, calls = getattr(args, "max_cost_usd", None), getattr(args, "max_calls", None)
    if cost is None and calls is None:
        return None
    if cost is not None and (not math.isfinite(cost) or cost < 0):
        raise TaskValidationError(f"--max-cost-usd: must be a finite number of USD, 0 or more (got {cost:g})",
                                  field="--max-cost-usd")
    if calls is not None and calls < 0:
        raise TaskValidationError(f"--max-calls: must be 0 or more (got {calls})", field="--max-calls")
    from oracle.providers.budget import Budget

    return Budget(max_cost_usd=cost, max_calls=calls)


def report_budget(budget: Any, skipped: int, what: str = "task(s)") -> None:
    """One line on stderr when the budget left something not run: how much, and what to do."""
    if budget is None or not skipped:
        return
    used = budget.as_dict()
    limits = ", ".join(f"--{k.replace('_', '-')} {v:g}" for k, v in (("max_calls", used["max_calls"]),
                                                                     ("max_cost_usd", used["max_cost_usd"]))
                       if v is not None)
    print(f"budget spent ({limits}: {used['calls']} requests sent, {used['cost_usd']:.6g} USD charged): "
          f"{skipped} {what} skipped (reason budget); rerun with a larger budget to run them", file=sys.stderr)
