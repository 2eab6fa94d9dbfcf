"""``oracle import swebench DATASET.jsonl [PREDICTIONS.jsonl] --repos DIR [-o OUT.jsonl]``: task files
from other formats (oracle/tasks/_swebench.py does the work).

Writes one JSON line per task (``{"task": ..., "trajectories": [...]}``, what ``oracle batch``
reads) to ``-o`` or stdout; every line is validated as a task before anything is written, so a bad
row writes nothing. The summary goes to stderr. Exit 0 when written, 2 for bad input (a row missing
a field, a repository not under ``--repos``, a prediction for an unknown instance).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("import", help="write task files from other formats (SWE-bench)")
    sub = parser.add_subparsers(dest="import_format", metavar="FORMAT")
    sub.required = True
    swe = sub.add_parser("swebench", help="SWE-bench-style rows and model predictions -> repository tasks")
    swe.add_argument("dataset", metavar="DATASET", help="rows: .jsonl, or a .json list")
    swe.add_argument("predictions", metavar="PREDICTIONS", nargs="?",
                     help="predictions (instance_id, model_name_or_path, model_patch): .jsonl, or a .json list or "
                          "object; left out: each task's one candidate is the gold patch")
    swe.add_argument("--repos", required=True, metavar="DIR",
                     help="local clones DIR/owner__name or DIR/owner/name, or bundles DIR/owner__name.bundle")
    swe.add_argument("-o", "--output", metavar="OUT", help="the task file to write (.jsonl); default stdout")
    swe.add_argument("--gold", action="store_true", help="with predictions: add the gold patch as candidate 'gold'")
    swe.add_argument("--relative-paths", action="store_true",
                     help="write repository paths relative to the output file's directory (keep the two together)")
    swe.set_defaults(func=_swebench)


def _swebench(args: argparse.Namespace) -> int:
    from oracle.errors import TaskValidationError
    from oracle.tasks._swebench import RepositoryFinder, import_rows, read_records
    from oracle.tasks.files import parse_task

    repos = Path(args.repos)
    if not repos.is_dir():
        raise TaskValidationError(f"--repos: {repos} is not a directory", field="--repos")
    if args.relative_paths and not args.output:
        raise TaskValidationError("--relative-paths: needs -o (paths are relative to the output file)",
                                  field="--relative-paths")
    dataset = read_records(Path(args.dataset))
    predictions = read_records(Path(args.predictions)) if args.predictions else None
    imported = import_rows(dataset, predictions, RepositoryFinder(repos), with_gold=args.gold)
    out_dir = os.path.abspath(os.path.dirname(args.output) or ".") if args.output else None
    lines = []
    for where, doc in imported.items:
        if args.relative_paths:
            repository = doc["task"]["repository"]
            for key in ("path", "bundle"):
                if key in repository:
                    repository[key] = os.path.relpath(repository[key], out_dir)
        try:  # what is written loads as a task, from where it is written
            parse_task(doc, base_dir=out_dir)
        except TaskValidationError as exc:
            raise TaskValidationError(f"{where} ({doc['task']['id']}): {exc}", field=exc.field) from None
        lines.append(json.dumps(doc, ensure_ascii=False, sort_keys=True) + "\n")
    if args.output:
        tmp = Path(args.output + ".tmp")
        tmp.write_text("".join(lines), encoding="utf-8")
        os.replace(tmp, args.output)
    else:
        sys.stdout.write("".join(lines))
    where_to = args.output or "stdout"
    print(f"wrote {len(lines)} task(s) with {imported.trajectories} candidate(s) to {where_to}", file=sys.stderr)
    if imported.without_predictions:
        shown = ", ".join(imported.without_predictions[:10]) + (" ..." if len(imported.without_predictions) > 10
                                                                 else "")
        print(f"left out {len(imported.without_predictions)} instance(s) no prediction names: {shown}",
              file=sys.stderr)
    return 0
