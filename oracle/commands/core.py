"""``oracle route``, ``oracle evaluate`` and ``oracle config show``."""

from __future__ import annotations

import argparse
import json
import sys

from oracle.config import OracleConfig


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("route", help="show which evaluator each task goes to, with the trace")
    p.add_argument("file", help="task file: .json, .yaml or .jsonl")
    p.add_argument("--json", action="store_true", help="one line of JSON per task")
    p.add_argument("--history", help="earlier results JSONL: feeds the prior_hardness signal")
    p.set_defaults(func=cmd_route)

    p = sub.add_parser("evaluate", help="route and evaluate each task")
    p.add_argument("file", help="task file: .json, .yaml or .jsonl")
    p.add_argument("--json", action="store_true", help="one line of JSON per task")
    p.add_argument("--history", help="earlier results JSONL: feeds the prior_hardness signal")
    p.add_argument("--strict", action="store_true", help="exit 3 when any task is not ok")
    p.add_argument("--store", help="file unanswered escalation requests in this SQLite store "
                                   "(blocking ones make the task pending; see `oracle escalations`)")
    p.add_argument("--human", choices=("console",), help="ask escalation questions on the terminal now")
    p.set_defaults(func=cmd_evaluate)

    p = sub.add_parser("config", help="configuration")
    csub = p.add_subparsers(dest="config_command", metavar="ACTION")
    csub.required = True
    show = csub.add_parser("show", help="print the effective config (secrets hidden) and its hash")
    show.add_argument("--json", action="store_true")
    show.set_defaults(func=cmd_config_show)


def _history(args: argparse.Namespace) -> dict[str, float] | None:
    from oracle.history import load_history

    return load_history(args.history) if getattr(args, "history", None) else None


def cmd_route(args: argparse.Namespace) -> int:
    # Routing needs the config, the task model and the policy chain only: not the Oracle, whose
    # evaluators bring the provider stack (httpx, asyncio) with them.
    from oracle.render import render_route
    from oracle.router import PolicyChain
    from oracle.task_file import load_tasks

    config = OracleConfig.load(args.config)
    tasks = load_tasks(args.file, limits=config.limits)
    chain, history = PolicyChain(config), _history(args)
    for item in tasks:
        route = chain.route(item.task, item.trajectories, history=history)
        if args.json:
            print(json.dumps({"task_id": item.task.id, "route": route.model_dump(mode="json")},
                             sort_keys=True))
        else:
            print(render_route(route, item.task.id) + "\n")
    return 0


def cmd_evaluate(args: argparse.Namespace) -> int:
    from oracle.oracle import Oracle
    from oracle.render import render_result
    from oracle.task_file import load_tasks

    config = OracleConfig.load(args.config)
    tasks = load_tasks(args.file, limits=config.limits)
    human = store = None
    if args.human == "console":
        from oracle.human import ConsoleHuman

        human = ConsoleHuman()
    if args.store:
        from oracle.escalation_store import EscalationStore

        store = EscalationStore(args.store)
    oracle = Oracle(config, history=_history(args), human=human, store=store)
    not_ok = 0
    for item in tasks:
        res = oracle.evaluate(item)
        not_ok += res.status.value != "ok"
        if args.json:
            print(res.to_json())
        else:
            print(render_result(res) + "\n")
        sys.stdout.flush()
    return 3 if (args.strict and not_ok) else 0


def cmd_config_show(args: argparse.Namespace) -> int:
    import yaml

    config = OracleConfig.load(args.config)
    data = config.model_dump(mode="json")
    out = {"config_hash": config.hash(), "config": data}
    if args.json:
        print(json.dumps(out, sort_keys=True, indent=2))
    else:
        print(f"# config_hash: {config.hash()}")
        print(yaml.safe_dump(data, sort_keys=True), end="")
    return 0
