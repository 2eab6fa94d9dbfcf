"""``oracle check TASKFILE``: validate each task's tests on its reference solution, run nothing else.

Prints each test's outcome on ``task.solution`` (without one: which tests are broken whatever the
candidate) and the broken tests with why. Exit 0 when no test is broken, 3 when a test is broken
or the tests cannot be verified (``task.solution`` does not load), 2 for a task file that does not
load (which includes tests broken on sight: the error names the test).
"""

from __future__ import annotations

import argparse
import asyncio
import json


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("check", help="run each task's tests on its reference solution (task.solution) "
                                     "and report the broken ones")
    p.add_argument("file", help="task file: .json, .yaml or .jsonl")
    p.add_argument("--json", action="store_true", help="one line of JSON per task")
    p.set_defaults(func=cmd_check)


def cmd_check(args: argparse.Namespace) -> int:
    from oracle.cli.render import BLANK, check_blocks, show
    from oracle.config.model import OracleConfig
    from oracle.strategies.verifier.check import check_tests
    from oracle.strategies.verifier.strategy import VerifierStrategy
    from oracle.tasks.files import load_tasks

    config = OracleConfig.load(args.config)
    tasks = load_tasks(args.file, limits=config.limits)
    strategy = VerifierStrategy()
    failing = 0
    try:
        for item in tasks:
            report = asyncio.run(check_tests(strategy, item.task, config))
            failing += not report.ok
            if args.json:
                print(json.dumps(report.as_dict(), sort_keys=True))
            else:
                show([*check_blocks(report), BLANK])
    finally:
        strategy.close()
    return 3 if failing else 0
