"""``oracle batch tasks.jsonl -o results.jsonl``: every input line gets one row; reruns resume."""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

from oracle.batch.rows import DEFAULT_TASK_TIMEOUT_S
from oracle.config import OracleConfig


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("batch", help="evaluate a JSONL file of tasks into a JSONL file of rows (resumable)")
    p.add_argument("file", help="input .jsonl, one task per line")
    p.add_argument("-o", "--output", required=True, help="output .jsonl (appended to; a rerun resumes)")
    p.add_argument("--concurrency", type=int, default=16, help="tasks in flight (default 16)")
    p.add_argument("--engine", choices=("local", "ray"), default="local")
    p.add_argument("--ray-address", help="Ray cluster address (default: start a local cluster)")
    p.add_argument("--export", choices=("parquet",), help="also write <output>.parquet")
    p.add_argument("--store", help="escalation store (default: escalation.store_path of the config)")
    p.add_argument("--no-store", action="store_true", help="do not file escalation requests")
    p.add_argument("--task-timeout", type=float, default=DEFAULT_TASK_TIMEOUT_S,
                   help="seconds per input line, parsing and evaluating, before it becomes a failed row "
                        f"(default {DEFAULT_TASK_TIMEOUT_S:g}; 0 turns the bound off)")
    p.add_argument("--progress-interval", type=float, default=5.0,
                   help="seconds between progress log lines when not on a terminal")
    p.add_argument("--summary-json", action="store_true", help="print the summary as JSON instead of a table")
    p.set_defaults(func=cmd_batch)


def cmd_batch(args: argparse.Namespace) -> int:
    from oracle.batch import export_parquet, render_summary, run_batch

    if args.concurrency < 1:
        print("error: --concurrency: must be at least 1", file=sys.stderr)
        return 2
    if not math.isfinite(args.task_timeout) or args.task_timeout < 0:
        print("error: --task-timeout: must be a finite number of seconds, 0 for no bound", file=sys.stderr)
        return 2
    config = OracleConfig.load(args.config)
    store = None if (args.no_store or not config.escalation.enabled) else (args.store or config.escalation.store_path)
    report = run_batch(args.file, args.output, config=config, concurrency=args.concurrency, engine=args.engine,
                       ray_address=args.ray_address, store_path=store, timeout_s=args.task_timeout or None,
                       progress_interval_s=args.progress_interval)
    if args.export == "parquet":
        dest = Path(args.output).with_suffix(".parquet")
        n = export_parquet(args.output, dest)
        print(f"exported {n} rows to {dest}", file=sys.stderr)
    if args.summary_json:
        print(json.dumps({"total": report.total, "resumed": report.resumed, "computed": report.computed,
                          "elapsed_s": round(report.elapsed_s, 3), **report.summary}, sort_keys=True))
    else:
        print(render_summary(report.summary))
        print(f"{report.total} input lines, {report.resumed} resumed, {report.computed} computed "
              f"in {report.elapsed_s:.1f}s")
    if report.summary["rows"] != report.total:
        print(f"error: {args.output} holds {report.summary['rows']} rows for {report.total} input lines; "
              "rows from a different input file?", file=sys.stderr)
        return 1
    return 0
