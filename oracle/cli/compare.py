"""``oracle compare LABELLED.jsonl -o DIR``: every evaluator on a labelled set, side by side.

A thin layer over ``oracle.compare`` (oracle/comparison/api.py). Inputs: a labelled JSONL file, or
with ``--import suite`` / ``--import halueval`` the shared data's own formats, converted on the
fly (reserved records dropped; the file defaults to the one under ``--data``). Outputs in DIR:
``runs.jsonl`` (one record per arm x item x repeat x order), ``summary.json``, ``report.html``;
the table goes to stdout. Bad labels or options exit 2 before any model call; a rerun resumes.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
from pathlib import Path
from typing import Any, Iterator

from oracle.cli.budget_flags import add_budget_flags, budget_from, report_budget
from oracle.comparison.records import ARMS


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("compare", help="run every evaluator on a labelled set and compare them (resumable)")
    p.add_argument("file", nargs="?", help="labelled .jsonl (with --import suite: a suite-format file; "
                                           "default for suite/halueval: the file under --data)")
    p.add_argument("-o", "--output", required=True, help="output directory (a rerun resumes into it)")
    p.add_argument("--import", dest="import_format", choices=("labelled", "suite", "halueval", "humaneval"),
                   default="labelled",
                   help="input format: our labelled JSONL (default), the shared suite format, HaluEval's "
                        "general_data.json (a balanced, seeded sample of --limit items, default 40), or the 80 "
                        "non-reserved HumanEval tasks with --candidates labelled CodeGen-16B samples each")
    p.add_argument("--candidates", type=int, default=3, help="--import humaneval: samples per task (default 3)")
    p.add_argument("--labels", choices=("gold", "verifier"), default="gold",
                   help="what the arms are scored against: the file's gold labels (default), or the verifier's "
                        "pass/fail per candidate (the verifier arm then runs but is left out of the ranking; "
                        "gold agreement is reported alongside)")
    p.add_argument("--data", help="shared data directory (default: $ORACLE_DATA_DIR, else ../shared/data)")
    p.add_argument("--arms", default=",".join(ARMS), help=f"comma-separated arms (default: {','.join(ARMS)})")
    p.add_argument("--repeats", type=int, default=1, help="runs per item and order (default 1)")
    p.add_argument("--both-orders", action="store_true",
                   help="also run with candidates and choice options reversed; flips are reported")
    p.add_argument("--limit", type=int, help="at most N items, spread over label strata by --seed")
    p.add_argument("--select", action="append", help="only items whose id matches this glob (repeatable)")
    p.add_argument("--seed", type=int, default=None,
                   help="fixes every random choice (sampling, bootstrap, the LLM judge's placement: llm_judge.seed); "
                        "default: the config's llm_judge.seed (0)")
    p.add_argument("--timeout-s", type=float, default=300.0,
                   help="an evaluation slower than this is late and never counts as correct (default 300)")
    p.add_argument("--concurrency", type=int, default=4,
                   help="runs in flight (default 4; providers keep their own limit)")
    p.add_argument("--local-model", action="store_true",
                   help="start the embedded local model for this run when the judge endpoint does not answer")
    p.add_argument("--write-labelled", metavar="FILE", help="write the (converted) labelled items here and stop")
    cache = p.add_mutually_exclusive_group()
    cache.add_argument("--cache", metavar="DIR",
                       help="response cache directory, shared between runs (default: OUTPUT/cache/ for every provider "
                            "section that sets no cache_path)")
    cache.add_argument("--no-cache", action="store_true", help="no response cache: every model call is made")
    p.add_argument("--no-report", action="store_true", help="skip report.html")
    p.add_argument("--summary-json", action="store_true", help="print summary.json instead of the table")
    add_budget_flags(p)
    p.set_defaults(func=cmd_compare)


def _load(args: argparse.Namespace) -> tuple[list[Any], str, int]:
    """(items, source, reserved records dropped); bad input raises TaskValidationError (exit 2)."""
    from oracle.comparison._labels import load_labelled
    from oracle.errors import TaskValidationError

    if args.import_format == "labelled":
        if not args.file:
            raise TaskValidationError("LABELLED: a labelled .jsonl file is required", field="LABELLED")
        return load_labelled(args.file), args.file, 0
    from oracle.comparison._importers import HALUEVAL_FILE, SUITE_FILE, import_halueval, import_suite
    from oracle._internal.data_paths import DataNotFound, shared_data_dir

    try:
        data = shared_data_dir(args.data, required=("suite/reserved_keys.json",))
    except DataNotFound as exc:
        raise TaskValidationError(f"--data: {exc}", field="--data") from None
    if args.import_format == "humaneval":
        from oracle.comparison._humaneval import HUMANEVAL_FILE, SAMPLES_FILE, import_humaneval

        for name in (HUMANEVAL_FILE, SAMPLES_FILE):
            if not (data / name).is_file():
                raise TaskValidationError(f"--data: {data / name} not found", field="--data")
        if args.candidates < 2:
            raise TaskValidationError("--candidates: at least 2", field="--candidates")
        items, dropped = import_humaneval(data, per_task=args.candidates, seed=args.seed)
        return items, str(data / SAMPLES_FILE), dropped
    if args.import_format == "suite":
        path = Path(args.file) if args.file else data / SUITE_FILE
        if not path.is_file():
            raise TaskValidationError(f"FILE: suite file not found: {path}", field="FILE")
        items, dropped = import_suite(path, data)
        return items, str(path), dropped
    if not (data / HALUEVAL_FILE).is_file():
        raise TaskValidationError(f"--data: {data / HALUEVAL_FILE} not found", field="--data")
    items, dropped = import_halueval(data, n=args.limit or 40, seed=args.seed)
    return items, str(data / HALUEVAL_FILE), dropped


@contextlib.contextmanager
def _local_model(config: Any, wanted: bool) -> Iterator[Any]:
    """The config, aimed at a freshly started embedded model when asked and nothing answers."""
    from oracle.local_model import LocalModelServer, probe
    from oracle.providers.openai_chat import LOCAL_MODEL_ALIAS

    judge = config.providers.judge
    if not wanted or judge.model != LOCAL_MODEL_ALIAS or probe(judge.base_url) is not None:
        yield config
        return
    print("starting the embedded local model (llama.cpp + SmolLM2)...", file=sys.stderr)
    server = LocalModelServer().start(ready_timeout_s=120)
    try:
        providers = config.providers.model_copy(update={"judge": judge.model_copy(
            update={"base_url": server.base_url, "concurrency": 1})})
        yield config.model_copy(update={"providers": providers})
    finally:
        server.stop()


def cmd_compare(args: argparse.Namespace) -> int:
    from oracle.comparison.api import check_settings, compare
    from oracle.comparison._labels import dump_item
    from oracle.cli.progress_bar import rich_bar
    from oracle.cli.render import comparison_blocks, show
    from oracle.config.model import OracleConfig

    arms = check_settings(args.arms.split(","), args.repeats, args.limit, args.timeout_s, args.concurrency)
    config = OracleConfig.load(args.config)
    if args.seed is None:
        args.seed = config.llm_judge.seed
    budget = budget_from(args)
    items, source, dropped = _load(args)
    if args.write_labelled:
        from oracle.comparison._plan import limit_items, select_items
        from oracle.errors import TaskValidationError

        # the items a comparison with the same --limit/--select/--seed would run, no more
        items = limit_items(select_items(items, args.select), args.limit, args.seed)
        if not items:
            raise TaskValidationError("--select: no item matches", field="--select")
        with open(args.write_labelled, "w", encoding="utf-8") as fh:
            for item in items:
                fh.write(json.dumps(dump_item(item), ensure_ascii=False) + "\n")
        print(f"wrote {len(items)} labelled items to {args.write_labelled} ({dropped} reserved records dropped)",
              file=sys.stderr)
        return 0
    from oracle.errors import EndpointUnreachable

    try:
        with _local_model(config, args.local_model) as run_config:
            result = compare(items, args.output, arms=arms, repeats=args.repeats, both_orders=args.both_orders,
                             limit=args.limit, select=args.select, seed=args.seed, timeout_s=args.timeout_s,
                             concurrency=args.concurrency, config=run_config, report=not args.no_report,
                             cache=False if args.no_cache else (args.cache or True),
                             source=source, dropped_reserved=dropped, progress_bar=rich_bar(), budget=budget,
                             labels=args.labels)
    except EndpointUnreachable as exc:
        print(f"error: the comparison stopped: {exc}\nthe runs written to {args.output} are kept; once the endpoint "
              "answers (or with --local-model), rerun the same command to compute the rest", file=sys.stderr)
        return 2
    if args.summary_json:
        print(json.dumps(result.summary.model_dump(mode="json"), indent=2, sort_keys=True))
    else:
        show(comparison_blocks(result.summary))
        print(f"\nruns: {result.runs_path} ({result.computed} run now, {result.resumed} resumed{_cached(result)})\n"
              f"summary: {result.summary_path}\nreport: {_report_line(result, args.no_report)}\n"
              f"cache: {result.cache_path or 'off (--no-cache)'}")
    report_budget(budget, sum(r.status == "skipped" for r in result.records), "run(s)")
    return 0


def _cached(result: Any) -> str:
    """", N model calls from the cache" for the calls this run did not send (nothing when none)."""
    hits = result.cached_calls
    return f", {hits} model call{'s' * (hits != 1)} from the cache" if hits else ""


def _report_line(result: Any, skipped: bool) -> str:
    if result.report_path is not None:
        return str(result.report_path)
    return "skipped (--no-report)" if skipped else f"not written: {result.report_error}"
