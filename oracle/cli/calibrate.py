"""``oracle calibrate LABELLED.jsonl --evaluator decision_judge -o CALIBRATION.json``.

Exit codes: 0 written (cells with fewer than 30 labels are fitted with a warning in the evidence),
2 bad input (labels, arguments), no cell could be fitted (one class, constant probabilities; the
message accounts for every input item), or the model endpoint on this machine is not running:
nothing is written then, never a silently fitted threshold.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from pathlib import Path

from oracle.cli.budget_flags import add_budget_flags, budget_from


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("calibrate", help="fit decision thresholds and probability calibration on labelled items")
    p.add_argument("labelled", help="labelled JSONL (task, trajectories, label), as for `oracle compare`")
    p.add_argument("--evaluator", choices=("decision_judge",), default="decision_judge")
    p.add_argument("--model", help="fit only points answered by this model (default: every model that answered)")
    p.add_argument("-o", "--output", required=True, help="calibration file to write (JSON, version 2)")
    p.add_argument("--folds", type=int, default=5, help="k for the out-of-fold fit (default 5)")
    p.add_argument("--seed", type=int, default=0)
    target = p.add_mutually_exclusive_group()
    target.add_argument("--review-rate", type=float, help="min_confidence sends this share of verdicts to review")
    target.add_argument("--target-precision", type=float,
                        help="min_confidence is the lowest confidence whose verdicts reach this precision")
    p.add_argument("--data", help="shared data folder (reserved records are dropped); default ORACLE_DATA_DIR or "
                                  "../shared/data")
    cache = p.add_mutually_exclusive_group()
    cache.add_argument("--cache", metavar="DIR",
                       help="response cache directory, shared between runs (default: cache/ beside the --output "
                            "file, for every provider section that sets no cache_path)")
    cache.add_argument("--no-cache", action="store_true", help="no response cache: every model call is made")
    add_budget_flags(p)
    p.set_defaults(func=cmd_calibrate)


def cmd_calibrate(args: argparse.Namespace) -> int:
    from oracle.calibrate import CalibrationRefused, acalibrate, reliability_png
    from oracle.config.calibration import write_calibration
    from oracle.comparison._labels import load_labelled
    from oracle.config.model import OracleConfig
    from oracle.errors import EndpointUnreachable
    from oracle._internal.data_paths import DataNotFound, shared_data_dir

    for name, value, lo, hi in (("--folds", args.folds, 2, 50), ("--review-rate", args.review_rate, 0, 1),
                                ("--target-precision", args.target_precision, 0, 1)):
        if value is not None and not lo <= value <= hi:
            print(f"error: {name} must be in [{lo}, {hi}], got {value}", file=sys.stderr)
            return 2
    out = Path(args.output)
    if out.suffix != ".json":
        print(f"error: --output: a calibration file is JSON (.json), got {out.name}", file=sys.stderr)
        return 2
    config = OracleConfig.load(args.config)
    budget = budget_from(args)
    from oracle.providers.budget import check_prices, using

    check_prices(config, budget)  # a cost budget over an unpriced model: exit 2 before any call
    items = load_labelled(args.labelled)  # TaskValidationError -> exit 2 before any call
    try:
        data_dir = shared_data_dir(args.data)
    except DataNotFound:
        if args.data:
            raise
        data_dir = None
    try:
        with using(budget):  # every request of the run (asyncio.run copies the context)
            cal = asyncio.run(acalibrate(items, config, model=args.model, k=args.folds, seed=args.seed,
                                         review_rate=args.review_rate, target_precision=args.target_precision,
                                         data_dir=data_dir, source=str(args.labelled),
                                         cache=False if args.no_cache else (args.cache or True),
                                         cache_default_dir=out.parent / "cache"))
    except CalibrationRefused as exc:
        print(f"error: {exc}" + (f"; {_budget_cut(budget)}" if _budget_cut(budget) else ""), file=sys.stderr)
        return 2
    except EndpointUnreachable as exc:
        print(f"error: calibration stopped before fitting anything (nothing was written): {exc}", file=sys.stderr)
        return 2
    if _budget_cut(budget):  # a fit on the items the budget happened to reach: never
        print(f"error: {_budget_cut(budget)}", file=sys.stderr)
        return 2
    out.parent.mkdir(parents=True, exist_ok=True)
    sha = write_calibration(out, cal)
    png = reliability_png(cal, out.with_suffix(".reliability.png"))
    ev = cal.evidence
    print(f"wrote {out} (sha256 {sha[:12]}): {ev['items']} items, {ev['points']} points, "
          f"{ev['reserved_dropped']} reserved dropped" + (f"; reliability diagram {png}" if png else ""))
    for model, mc in cal.models.items():
        for kind, cell in mc.kinds.items():
            b, a = cell.before, cell.after
            print(f"  {model} / {kind}: n={cell.n} threshold={cell.pass_threshold:.3f} "
                  f"kappa {b['kappa']['value']:.3f} -> {a['kappa']['value']:.3f}  "
                  f"ECE {b['ece']['value']:.3f} -> {a['ece']['value']:.3f}  "
                  f"min_confidence={cell.min_confidence}")
            for w in cell.warnings:
                print(f"    warning: {w}", file=sys.stderr)
        for kind, reason in mc.refused.items():
            print(f"  {model} / {kind}: refused: {reason}", file=sys.stderr)
    if ev.get("skipped"):
        print(f"  no point from: {json.dumps(ev['skipped'], sort_keys=True)}", file=sys.stderr)
    return 0


def _budget_cut(budget: object) -> str | None:
    """What to say when the budget refused a request (then nothing is written), else None."""
    if budget is None or not getattr(budget, "refused", 0):
        return None
    used = budget.as_dict()  # type: ignore[attr-defined]
    return (f"the budget was spent before every item was answered ({used['calls']} requests sent, "
            f"{used['refused']} refused); nothing was written: rerun with a larger --max-calls/--max-cost-usd")
