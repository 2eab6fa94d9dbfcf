"""``oracle batch tasks.jsonl -o results.jsonl``: every input line gets one row; reruns resume."""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

from oracle.batch.rows import DEFAULT_TASK_TIMEOUT_S
from oracle.cli.budget_flags import add_budget_flags, budget_from, report_budget
from oracle.cli.seed_option import add_seed_flag, with_seed
from oracle.config.model import OracleConfig


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("batch", help="evaluate a JSONL file of tasks into a JSONL file of rows (resumable)")
    p.add_argument("file", help="input .jsonl, one task per line; - (or /dev/stdin) reads the lines from stdin")
    p.add_argument("-o", "--output", required=True, help="output .jsonl (appended to; a rerun resumes)")
    p.add_argument("--concurrency", type=int, default=16, help="tasks in flight (default 16)")
    p.add_argument("--engine", choices=("local", "ray"), default="local")
    p.add_argument("--ray-address", help="Ray cluster address (default: start a local cluster)")
    p.add_argument("--export", choices=("parquet",), help="also write <output>.parquet")
    p.add_argument("--store", help="escalation store (default: $ORACLE_STORE, else escalation.store_path "
                                   "of the config, else .oracle/escalations.sqlite)")
    p.add_argument("--no-store", action="store_true", help="do not file escalation requests")
    p.add_argument("--recompute", action="store_true",
                   help="recompute the rows of the output that were computed under another config "
                        "(without it, such an output is refused and left as it is)")
    p.add_argument("--no-learn", action="store_true",
                   help="route without the store's outcome history and do not log outcomes to it")
    p.add_argument("--task-timeout", type=float, default=DEFAULT_TASK_TIMEOUT_S,
                   help="seconds per input line, parsing and evaluating, before it becomes a failed row "
                        f"(default {DEFAULT_TASK_TIMEOUT_S:g}; 0 turns the bound off)")
    p.add_argument("--progress-interval", type=float, default=5.0,
                   help="seconds between progress log lines when not on a terminal")
    p.add_argument("--format", choices=("rows", "candidates"), default="rows",
                   help="what -o holds: rows (the resumable JSONL rows) or candidates (one row per candidate as "
                        ".jsonl, .csv or .parquet from the extension; the rows are then kept beside it in "
                        "NAME.rows.jsonl, which a rerun resumes)")
    add_seed_flag(p)
    p.add_argument("--summary-json", action="store_true", help="print the summary as JSON instead of a table")
    p.add_argument("--strict", action="store_true",
                   help="exit 3 when any row is not ok (failed, unparsed, pending, abstained, invalid input)")
    add_budget_flags(p)
    p.set_defaults(func=cmd_batch)


def _bad(message: str) -> int:
    print(f"error: {message}", file=sys.stderr)
    return 2


def preflight(args: argparse.Namespace) -> str | None:
    """Everything that can be checked before the first line runs: a problem found after an hour
    of evaluation (a missing export dependency, an export that would overwrite the rows) is a
    problem that should have stopped the batch at once."""
    from oracle.cli.task_source import is_stdin

    source, output = Path(args.file), Path(args.output)
    if is_stdin(args.file):
        pass
    elif source.is_dir():
        return f"{args.file}: is a directory, not a JSONL file"
    elif source.suffix != ".jsonl":
        return (f"{args.file}: batch reads JSONL (one task per line, a .jsonl file); for one JSON or YAML "
                "task file use `oracle evaluate`")
    if args.format == "candidates":
        from oracle.cli.candidate_rows import output_problem

        problem = output_problem(args.output)
        if problem:
            return problem
        if args.export:
            return "--export parquet: with --format candidates, name the output .parquet instead"
    elif output.suffix != ".jsonl":
        return f"--output: {args.output}: rows are written as JSONL; name the output .jsonl"
    if args.concurrency < 1:
        return "--concurrency: must be at least 1"
    if not math.isfinite(args.task_timeout) or args.task_timeout < 0:
        return "--task-timeout: must be a finite number of seconds, 0 for no bound"
    if args.export == "parquet":
        from oracle.batch import parquet_available

        if not parquet_available():
            return "--export parquet needs pyarrow: pip install 'oracle-router[parquet]'"
        dest = output.with_suffix(".parquet")
        if dest.exists() and not dest.is_file():
            return f"--export parquet: {dest} exists and is not a file"
        if not dest.parent.is_dir():
            return f"--export parquet: the directory {dest.parent} does not exist"
    return None


def rows_file(args: argparse.Namespace) -> str:
    """Where the resumable rows go: ``-o`` itself, or beside the candidates file
    (``out.csv`` -> ``out.rows.jsonl``)."""
    if args.format != "candidates":
        return args.output
    out = Path(args.output)
    return str(out.with_name(out.stem + ".rows.jsonl"))


def _escalation_hint(summary: dict, store: str | None, no_store: bool) -> None:
    """Where the rows' escalation requests are, and the command that lists them."""
    from oracle.escalation._location import store_flag

    raised = sum(s.get("escalations", 0) for s in summary.get("evaluators", {}).values())
    if not raised:
        return
    if store is None:
        why = "--no-store" if no_store else "escalation.enabled is false"
        print(f"{raised} row(s) raised an escalation request; not filed ({why}): rerun without it to file them",
              file=sys.stderr)
    else:
        print(f"{raised} row(s) raised an escalation request, filed in {store}: "
              f"`oracle escalations list{store_flag(store)}`", file=sys.stderr)


def cmd_batch(args: argparse.Namespace) -> int:
    from oracle.batch import export_parquet, run_batch
    from oracle.cli.progress_bar import rich_bar
    from oracle.cli.render import batch_summary_blocks, show
    from oracle.cli.task_source import spooled_jsonl

    problem = preflight(args)
    if problem:
        return _bad(problem)
    from oracle.escalation._location import resolve_store_path

    config = with_seed(OracleConfig.load(args.config), args.seed)
    budget = budget_from(args)
    store = None if (args.no_store or not config.escalation.enabled) else resolve_store_path(args.store, config)
    rows_path = rows_file(args)
    with spooled_jsonl(args.file) as source:
        report = run_batch(source, rows_path, config=config, concurrency=args.concurrency, engine=args.engine,
                           ray_address=args.ray_address, store_path=store, timeout_s=args.task_timeout or None,
                           progress_interval_s=args.progress_interval, progress_bar=rich_bar(),
                           learn_history=not args.no_learn, recompute=args.recompute, budget=budget)
    exported_ok = True
    if args.format == "candidates":
        from oracle.batch.output import iter_rows
        from oracle.cli.candidate_rows import write_candidates

        # rows land in the order they finish; the table follows the input's
        n = write_candidates(sorted(iter_rows(rows_path), key=lambda row: row.get("line") or 0), args.output)
        print(f"wrote {n} candidate rows to {args.output} (rows: {rows_path})", file=sys.stderr)
    if args.export == "parquet":
        dest = Path(args.output).with_suffix(".parquet")
        try:
            n = export_parquet(args.output, dest)
            print(f"exported {n} rows to {dest}", file=sys.stderr)
        except (OSError, ValueError, RuntimeError) as exc:  # the JSONL rows stay as they are
            print(f"error: --export parquet failed ({type(exc).__name__}: {exc}); the rows are intact in "
                  f"{args.output}", file=sys.stderr)
            exported_ok = False
    if args.summary_json:
        print(json.dumps({"total": report.total, "resumed": report.resumed, "computed": report.computed,
                          "rerun_skipped": report.rerun_skipped, "budget": report.budget,
                          "elapsed_s": round(report.elapsed_s, 3), **report.summary}, sort_keys=True))
    else:
        show(batch_summary_blocks(report.summary))
        print(f"{report.total} input lines, {report.resumed} resumed, {report.computed} computed"
              + (f" ({report.recomputed} recomputed under config {config.hash()})" if report.recomputed else "")
              + (f" ({report.rerun_skipped} skipped before, run again)" if report.rerun_skipped else "")
              + f" in {report.elapsed_s:.1f}s")
        _escalation_hint(report.summary, store, args.no_store)
    report_budget(budget, report.summary.get("statuses", {}).get("skipped", 0), "row(s)")
    if report.stopped:
        left = report.total - report.summary["rows"]
        print(f"error: the run stopped: {report.stopped}\n{left} of {report.total} input lines have no row yet; "
              "once the endpoint answers, rerun the same command to compute them (the rows written are kept)",
              file=sys.stderr)
        return 2
    if report.summary["rows"] != report.total:
        print(f"error: {rows_path} holds {report.summary['rows']} rows for {report.total} input lines; "
              "rows from a different input file?", file=sys.stderr)
        return 1
    if not exported_ok:
        return 1
    if args.strict:
        not_ok = {k: v for k, v in report.summary.get("statuses", {}).items() if k != "ok"}
        if not_ok:
            print(f"--strict: {sum(not_ok.values())} row(s) not ok: "
                  + ", ".join(f"{k} {v}" for k, v in sorted(not_ok.items())), file=sys.stderr)
            return 3
    return 0
