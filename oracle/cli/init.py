"""``oracle init [DIR]``: a commented example task of each kind, and the schema editors read.

Why these four: they are the kinds of work the router tells apart (code with tests, a short answer
with a key, open-ended work on criteria, an agent run with expected tool calls). Each file evaluates
as written (the open-ended one once a model answers), so a new user edits a working task instead of
writing one from the docs. Existing files are never overwritten without ``--force``.
"""

from __future__ import annotations

import argparse
import json
import sys
from importlib import resources
from pathlib import Path

EXAMPLES = ("code.yaml", "short_answer.yaml", "open_ended.yaml", "agent_run.yaml")
SCHEMA_FILE = "oracle-task.schema.json"
"""Written beside the examples: their first line points the YAML language server at it."""


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("init", help="write a commented example task of each kind (and the task schema) into DIR")
    p.add_argument("dir", nargs="?", default=".", help="where to write them (default: here; created if missing)")
    p.add_argument("--force", action="store_true", help="overwrite example files that exist")
    p.set_defaults(func=cmd_init)


def cmd_init(args: argparse.Namespace) -> int:
    from oracle.cli.schema import task_file_schema

    target = Path(args.dir)
    if target.exists() and not target.is_dir():
        print(f"error: {target}: exists and is not a directory", file=sys.stderr)
        return 2
    names = (*EXAMPLES, SCHEMA_FILE)
    existing = [n for n in names if (target / n).exists()]
    if existing and not args.force:
        print(f"error: {target}: {', '.join(existing)} already there (--force overwrites them)", file=sys.stderr)
        return 2
    try:
        target.mkdir(parents=True, exist_ok=True)
        templates = resources.files("oracle.cli") / "templates"
        for name in EXAMPLES:
            (target / name).write_text(templates.joinpath(name).read_text(encoding="utf-8"), encoding="utf-8")
        (target / SCHEMA_FILE).write_text(json.dumps(task_file_schema(), indent=2, sort_keys=True) + "\n",
                                          encoding="utf-8")
    except OSError as exc:
        print(f"error: {target}: cannot write: {exc.strerror or exc}", file=sys.stderr)
        return 2
    where = "" if str(target) == "." else f"{target}/"
    print(f"wrote {', '.join(EXAMPLES)} and {SCHEMA_FILE} to {target}")
    print(f"next: oracle evaluate {where}code.yaml  (open_ended.yaml needs a model: `oracle model serve`)")
    return 0
