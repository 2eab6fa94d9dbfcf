"""``oracle route``, ``oracle evaluate`` and ``oracle config show``."""

from __future__ import annotations

import argparse
import json
import sys

from typing import TYPE_CHECKING

from oracle.cli.budget_flags import add_budget_flags, budget_from, report_budget
from oracle.cli.seed_option import add_seed_flag, with_seed
from oracle.config.model import OracleConfig

if TYPE_CHECKING:
    from oracle.batch.progress import Progress


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("route", help="show which evaluator each task goes to, with the trace")
    p.add_argument("file", help="task file: .json, .yaml or .jsonl; - (or /dev/stdin) reads it from stdin")
    p.add_argument("--json", action="store_true", help="one line of JSON per task")
    p.add_argument("--history", help="earlier results JSONL: feeds the prior_hardness signal")
    p.add_argument("-v", "--verbose", action="store_true", help="list the policies that abstained in the table")
    p.set_defaults(func=cmd_route)

    p = sub.add_parser("evaluate", help="route and evaluate each task",
                       description="Route and evaluate each task. Exit codes: 0 done; 3 when a task failed "
                                   "(status failed), unless --allow-failures; with --strict, 3 when any task is "
                                   "not ok (failed, unparsed, pending, abstained...); 2 bad input.")
    p.add_argument("file", help="task file: .json, .yaml or .jsonl; - (or /dev/stdin) reads it from stdin")
    p.add_argument("--json", action="store_true", help="one line of JSON per task")
    p.add_argument("--history", help="earlier results JSONL: feeds the prior_hardness signal")
    exits = p.add_mutually_exclusive_group()
    exits.add_argument("--strict", action="store_true", help="exit 3 when any task is not ok")
    exits.add_argument("--allow-failures", action="store_true",
                       help="exit 0 even when a task failed (by default a failed task exits 3)")
    stores = p.add_mutually_exclusive_group()
    stores.add_argument("--store", help="file unanswered escalation requests in this SQLite store (default: "
                                        "$ORACLE_STORE, else escalation.store_path of the config, else "
                                        ".oracle/escalations.sqlite); blocking ones make the task pending; "
                                        "see `oracle escalations`")
    stores.add_argument("--no-store", action="store_true",
                        help="file no escalation request (each request is printed, not stored)")
    p.add_argument("--human", choices=("console",), help="ask escalation questions on the terminal now")
    p.add_argument("-v", "--verbose", action="store_true",
                   help="list the policies that abstained in the routing table")
    p.add_argument("-q", "--quiet", "--no-route", dest="no_route", action="store_true",
                   help="verdicts only: no routing table (with --json: rows without the route trace)")
    p.add_argument("--progress", action=argparse.BooleanOptionalAction, default=None,
                   help="progress on stderr while evaluating several tasks (default: only on a terminal)")
    p.add_argument("--format", choices=("rows", "candidates"), default="rows",
                   help="what -o writes: rows (the --json rows, as JSONL) or candidates (one row per candidate: "
                        "task_id, candidate_id, evaluator, passed, score, status, reason, cost_usd, latency_ms)")
    p.add_argument("-o", "--output", metavar="FILE",
                   help="also write the rows to FILE: .jsonl for rows; .jsonl, .csv or .parquet for candidates")
    add_budget_flags(p)
    add_seed_flag(p)
    p.set_defaults(func=cmd_evaluate)

    p = sub.add_parser("config", help="configuration")
    csub = p.add_subparsers(dest="config_command", metavar="ACTION")
    csub.required = True
    show = csub.add_parser("show", help="print the effective config (secrets hidden) and its hash")
    show.add_argument("--json", action="store_true")
    show.set_defaults(func=cmd_config_show)


def _history(args: argparse.Namespace) -> dict[str, float] | None:
    from oracle.routing._history import load_history

    return load_history(args.history) if getattr(args, "history", None) else None


def cmd_route(args: argparse.Namespace) -> int:
    # Routing needs the config, the task model and the policy chain only: not the Oracle, whose
    # evaluators bring the provider stack (httpx, asyncio) with them.
    from oracle.cli.render import BLANK, route_blocks, show
    from oracle.routing._chain import PolicyChain
    from oracle.cli.task_source import load_task_file
    from oracle.routing.route import route_adapter

    config = OracleConfig.load(args.config)
    tasks = load_task_file(args.file, config.limits)
    chain, history = PolicyChain(config), _history(args)
    for item in tasks:
        route = chain.route(item.task, item.trajectories, history=history)
        if args.json:
            row = {"task_id": item.task.id, "route": route_adapter().dump_python(route, mode="json")}
            print(json.dumps(row, sort_keys=True))
        else:
            show([*route_blocks(route, item.task.id, verbose=args.verbose), BLANK])
    return 0


def cmd_evaluate(args: argparse.Namespace) -> int:
    import time

    from rich.text import Text

    from oracle._internal.canonical import canonical_json
    from oracle._oracle import Oracle
    from oracle.batch.rows import oracle_row
    from oracle.cli.render import BLANK, escalation_hint, result_blocks, show
    from oracle.cli.task_source import load_task_file
    from oracle.escalation._location import resolve_store_path

    from oracle.cli.task_source import is_stdin

    problem = _output_problem(args)
    if args.human == "console" and is_stdin(args.file):
        problem = "--human console reads the answers from stdin, which holds the task here: give the task as a file"
    if problem:
        print(f"error: {problem}", file=sys.stderr)
        return 2
    config = with_seed(OracleConfig.load(args.config), args.seed)
    budget = budget_from(args)
    tasks = load_task_file(args.file, config.limits)
    human = store = None
    if args.human == "console":
        from oracle.escalation.human import ConsoleHuman

        human = ConsoleHuman()
    store_path = resolve_store_path(args.store, config)
    filing = config.escalation.enabled and not args.no_store
    if filing:
        from oracle.escalation.store import EscalationStore

        # Opened at the first request filed: a run that raises none leaves no file behind.
        store = EscalationStore(store_path, open_now=False)
    not_stored = None if filing else ("--no-store" if args.no_store else "escalation.enabled is false")
    oracle = Oracle(config, history=_history(args), human=human, store=store, budget=budget)
    not_ok = failed = skipped = 0
    written: list[dict] = []
    try:
        with _progress(args, len(tasks)) as progress:
            for line, item in enumerate(tasks, 1):
                progress.running(item.task.id)
                started = time.perf_counter()
                res = oracle.evaluate(item)
                row = oracle_row(res, line=line, key=None, wall_ms=(time.perf_counter() - started) * 1000,
                                 with_route=not args.no_route)
                row["config_hash"] = config.hash()
                progress.update({"status": res.status.value})
                not_ok += res.status.value != "ok"
                failed += res.status.value == "failed"
                skipped += res.status.value == "skipped"
                hint = escalation_hint(res.escalation, store_path, not_stored=not_stored)
                if args.output:
                    written.append(row)
                if args.json:
                    print(canonical_json(row))
                    if hint:
                        print(hint, file=sys.stderr)
                else:
                    show([*result_blocks(res, show_route=not args.no_route, verbose=args.verbose),
                          *([Text(hint)] if hint else []), BLANK])
                sys.stdout.flush()
    finally:
        if store is not None:
            store.close()
    if args.output:
        _write_output(args, written)
    report_budget(budget, skipped)
    if args.strict and not_ok:
        return 3
    if failed and not args.allow_failures:
        print(f"{failed} of {len(tasks)} task(s) failed (exit 3; --allow-failures exits 0)", file=sys.stderr)
        return 3
    return 0


def _progress(args: argparse.Namespace, total: int) -> Progress:
    """Progress for ``evaluate``: by default a bar when several tasks run and stderr is a terminal
    (never while ``--human console`` asks questions there); ``--progress`` also off a terminal, as
    plain lines; ``--no-progress`` never."""
    from oracle.batch.progress import Progress
    from oracle.cli.progress_bar import rich_bar

    wanted = args.progress if args.progress is not None else (total > 1 and args.human is None)
    if not wanted:
        return Progress(total, tty=False, off_tty="off", label="evaluate")
    return Progress(total, off_tty="text" if args.progress else "off", label="evaluate", interval_s=2.0,
                    bar=rich_bar(share_stdout=_isatty(sys.stdout)))


def _isatty(stream: object) -> bool:
    isatty = getattr(stream, "isatty", None)
    return bool(isatty()) if callable(isatty) else False


def _output_problem(args: argparse.Namespace) -> str | None:
    """Why ``-o`` / ``--format`` cannot be honoured, found before any task runs."""
    if args.format == "candidates" and not args.output:
        return "--format candidates: name the file with -o FILE (.jsonl, .csv or .parquet)"
    if not args.output:
        return None
    if args.format == "candidates":
        from oracle.cli.candidate_rows import output_problem

        return output_problem(args.output)
    from pathlib import Path

    if Path(args.output).suffix.lower() != ".jsonl":
        return f"-o {args.output}: rows are written as JSONL; name the file .jsonl (or use --format candidates)"
    return None


def _write_output(args: argparse.Namespace, rows: list[dict]) -> None:
    if args.format == "candidates":
        from oracle.cli.candidate_rows import write_candidates

        n = write_candidates(rows, args.output)
        print(f"wrote {n} candidate rows to {args.output}", file=sys.stderr)
        return
    from oracle._internal.canonical import canonical_json

    with open(args.output, "w", encoding="utf-8") as fh:
        for row in rows:
            fh.write(canonical_json(row) + "\n")
    print(f"wrote {len(rows)} rows to {args.output}", file=sys.stderr)


def cmd_config_show(args: argparse.Namespace) -> int:
    import yaml

    from oracle.routing._chain import build_policies

    config = OracleConfig.load(args.config)
    build_policies(config)                         # a policy name nothing registers is an error here too
    data = config.public_dump()                    # API keys as "set"/"unset", never their values
    out = {"config_hash": config.hash(), "config": data}
    if args.json:
        print(json.dumps(out, sort_keys=True, indent=2))
    else:
        print(f"# config_hash: {config.hash()}")
        print(yaml.safe_dump(data, sort_keys=True), end="")
    return 0
