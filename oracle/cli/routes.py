"""``oracle routes summary RESULTS.jsonl``: what the router did over a results file (oracle.routing._summary)."""

from __future__ import annotations

import argparse
import json


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("routes", help="routing reports over result files")
    rsub = p.add_subparsers(dest="routes_command", metavar="ACTION")
    rsub.required = True
    summary = rsub.add_parser("summary", help="evaluator distribution, confidence histogram, fallback and override "
                                              "rates, policy agreement, low-confidence and escalation rates")
    summary.add_argument("file", help="results JSONL (oracle batch output, or oracle evaluate --json lines)")
    summary.add_argument("--json", action="store_true", help="one JSON object instead of tables")
    summary.set_defaults(func=cmd_routes_summary)


def cmd_routes_summary(args: argparse.Namespace) -> int:
    from oracle.cli.render import route_summary_blocks, show
    from oracle.routing._summary import load_result_rows, summarize_routes

    summary = summarize_routes(load_result_rows(args.file))
    if args.json:
        print(json.dumps(summary.model_dump(mode="json"), sort_keys=True))
    else:
        show(route_summary_blocks(summary))
    return 0
