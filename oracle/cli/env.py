"""``oracle env build TASKFILE...``: build (or find) every environment the tasks name, now.

Why a command: an environment is built on first use, inside an evaluation, which is the wrong time
on a CI runner or a machine without network. Prebuilt here, with the same cache, key and pip
configuration, an evaluation later only mounts it. Each distinct environment is built once, and
one line per environment says what was built or reused, where, and what is in it.

Exit 0 when every environment is ready, 3 when one could not be built (its error is printed, the
others are still built), 2 for bad input (a task file, the config, an interpreter refused).
"""

from __future__ import annotations

import argparse
import json
import sys


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("env", help="the environments tasks run with")
    sub = parser.add_subparsers(dest="env_command", metavar="SUBCOMMAND")
    sub.required = True
    build = sub.add_parser("build", help="build the environments the tasks name into the environment cache")
    build.add_argument("files", nargs="+", metavar="TASKFILE", help="task files (.json, .yaml, .jsonl)")
    build.add_argument("--json", action="store_true", help="one line of JSON per environment")
    build.set_defaults(func=_build)


def _build(args: argparse.Namespace) -> int:
    from oracle.config.model import OracleConfig
    from oracle.errors import EnvironmentBuildError, InterpreterUnusable, TaskValidationError
    from oracle.strategies.verifier import environments
    from oracle.tasks.files import load_tasks

    config = OracleConfig.load(args.config)
    cfg = config.verifier
    wanted: dict[tuple, tuple] = {}
    without = 0
    for path in args.files:
        for item in load_tasks(path, limits=config.limits):
            env, source = environments.named(item.task.environment, cfg)
            if env is None:
                without += 1
                continue
            same = (env.python, tuple(env.normalized_requirements()), env.node_modules)  # one env, any spelling
            entry = wanted.setdefault(same, (env, source, []))
            entry[2].append(item.task.id)
    failed = 0
    for env, source, task_ids in wanted.values():
        row: dict = {"tasks": task_ids, "source": source}
        try:
            python = environments.python_for(env, source, cfg)
            run_env = environments.prepare(env, source, cfg, python)
        except InterpreterUnusable as exc:
            raise TaskValidationError(f"tasks {', '.join(task_ids)}: {exc}") from None
        except EnvironmentBuildError as exc:
            failed += 1
            row.update(status="failed", error=str(exc))
            _show(row, args.json)
            continue
        record = run_env.record
        status = "ready" if run_env.built is None else ("reused" if run_env.built.reused else "built")
        row.update(status=status, **{k: v for k, v in record.items() if k != "source"})
        _show(row, args.json)
    if not args.json:
        print(f"{len(wanted)} environment(s) for {sum(len(t) for *_, t in wanted.values())} task(s); "
              f"{without} task(s) name none; {failed} failed", file=sys.stderr)
    return 3 if failed else 0


def _show(row: dict, as_json: bool) -> None:
    if as_json:
        print(json.dumps(row, sort_keys=True))
        return
    if row["status"] == "failed":
        print(f"failed  {', '.join(row['tasks'])}: {row['error']}")
        return
    what = ", ".join(row.get("requirements") or []) or "no requirements"
    line = f"{row['status']:<7} {what} for Python {row['python_version']} ({row['python']})"
    if row.get("key"):
        took = row["build_seconds"] if row["status"] == "built" else row["seconds"]
        line += (f" in {took:.2f} s: {row['path']} ({len(row['installed'])} distribution(s), "
                 f"content {row['content_hash'][:16]})")
    if row.get("node_modules"):
        line += f"; node_modules {row['node_modules']}"
    print(line)
