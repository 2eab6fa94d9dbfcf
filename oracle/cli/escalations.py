"""``oracle escalations list|show|answer`` and ``oracle resume``: the human side of escalation.

Each command opens the store every command resolves the same way (``--store``, else
``ORACLE_STORE``, else ``escalation.store_path`` of the config, else the default path;
oracle/escalation/location.py), does one thing and exits, so the steps can happen in different
processes, days apart. The commands a hint names carry ``--store`` when the store is not the default.
"""

from __future__ import annotations

import argparse
import json
import sys

from oracle.config.model import OracleConfig


def _add_store(p: argparse.ArgumentParser) -> None:
    p.add_argument("--store", help="escalation store (SQLite); default: $ORACLE_STORE, else escalation.store_path "
                                   "of the config, else .oracle/escalations.sqlite")


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("escalations", help="list, show and answer requests for a human")
    esub = p.add_subparsers(dest="escalations_command", metavar="ACTION")
    esub.required = True

    lst = esub.add_parser("list", help="list stored requests")
    _add_store(lst)
    lst.add_argument("--state", choices=("pending", "answered", "resolved"), help="only this state")
    lst.add_argument("--json", action="store_true", help="one line of JSON per request")
    lst.set_defaults(func=cmd_list)

    show = esub.add_parser("show", help="show one request: question, options, evidence, answer")
    _add_store(show)
    show.add_argument("id", help="request id (a unique prefix of at least 8 characters is enough)")
    show.add_argument("--json", action="store_true")
    show.set_defaults(func=cmd_show)

    ans = esub.add_parser("answer", help="answer a request (apply it with `oracle resume ID`)")
    _add_store(ans)
    ans.add_argument("id")
    ans.add_argument("text", nargs="?", default="", help="free-text answer (appended to the task)")
    ans.add_argument("--choice", help="one of the request's options")
    ans.add_argument("--by", dest="answered_by", help="who answered (kept in the trace)")
    ans.add_argument("--replace", action="store_true",
                     help="replace an existing answer (the first answer wins otherwise; exit 2)")
    ans.set_defaults(func=cmd_answer)

    res = sub.add_parser("resume", help="apply a stored answer: re-route, re-evaluate, print the result")
    _add_store(res)
    res.add_argument("id")
    res.add_argument("--json", action="store_true", help="print the result as JSON")
    res.set_defaults(func=cmd_resume)


def _path(args: argparse.Namespace) -> str:
    from oracle.escalation._location import resolve_store_path

    return resolve_store_path(args.store, OracleConfig.load(args.config))


def _flag(args: argparse.Namespace) -> str:
    from oracle.escalation._location import store_flag

    return store_flag(_path(args))


def _open(args: argparse.Namespace):
    from oracle.escalation.store import EscalationStore

    return EscalationStore(_path(args))


def _missing_store(args: argparse.Namespace) -> str | None:
    """Reading commands never create a store: a missing file is said, not made."""
    from pathlib import Path

    path = _path(args)
    return None if path == ":memory:" or Path(path).exists() else path


def cmd_list(args: argparse.Namespace) -> int:
    missing = _missing_store(args)
    if missing:
        print(f"no escalations (no store at {missing}; a run files its requests in the store its --store, "
              "$ORACLE_STORE or the config names)", file=sys.stderr)
        return 0
    with _open(args) as store:
        entries = store.list(args.state)
    if args.json:
        for e in entries:
            print(json.dumps({"id": e.id, "task_id": e.task_id, "state": e.state, "reason": e.request.reason,
                              "blocking": e.request.blocking, "question": e.request.question,
                              "options": e.request.options}, sort_keys=True))
    elif entries:
        from oracle.cli.render import escalation_list_blocks, show

        show(escalation_list_blocks(entries))
    else:
        print(f"no escalations{' in state ' + args.state if args.state else ''} in {_path(args)}", file=sys.stderr)
    return 0


def cmd_show(args: argparse.Namespace) -> int:
    from oracle.escalation.store import EscalationNotFound

    missing = _missing_store(args)
    if missing:
        print(f"error: no escalation store at {missing}: nothing to show for {args.id!r}", file=sys.stderr)
        return 2

    with _open(args) as store:
        try:
            e = store.get(args.id)
        except EscalationNotFound as exc:
            print(f"error: {exc.args[0]}", file=sys.stderr)
            return 2
    if args.json:
        print(e.model_dump_json(indent=2))
        return 0
    print(f"id:       {e.id}\nstate:    {e.state}\ntask:     {e.task_id}\nreason:   {e.request.reason}"
          f" ({'blocks the verdict' if e.request.blocking else 'advisory'})")
    print(f"question: {e.request.question}")
    for i, option in enumerate(e.request.options or [], start=1):
        print(f"  {i}. {option}")
    print("evidence: " + json.dumps(e.request.evidence, sort_keys=True, default=str)[:2000])
    if e.answer:
        print(f"answer:   choice={e.answer.choice!r} text={e.answer.text!r}")
    if e.final_result:
        print(f"final:    status={e.final_result.status.value}"
              + (f" best={e.final_result.result.best}" if e.final_result.result else ""))
    return 0


def _bad_input(exc: Exception) -> int:
    """An unknown id or an answer that does not fit the request: exit 2 with the reason."""
    print(f"error: {exc.args[0] if exc.args else exc}", file=sys.stderr)
    return 2


def cmd_answer(args: argparse.Namespace) -> int:
    from oracle.errors import AlreadyAnswered, EscalationNotFound
    from oracle.escalation.human import HumanAnswer

    from pydantic import ValidationError

    try:
        given = HumanAnswer(text=args.text, choice=args.choice, answered_by=args.answered_by)
    except ValidationError as exc:
        err = exc.errors()[0]
        print(f"error: answer {'.'.join(str(p) for p in err['loc'])}: {err['msg']}", file=sys.stderr)
        return 2
    with _open(args) as store:
        try:
            e = store.answer(args.id, given, replace=args.replace)
        except (EscalationNotFound, AlreadyAnswered, ValueError) as exc:
            return _bad_input(exc)
    print(f"{e.id}: answered; apply it with `oracle resume {e.id}{_flag(args)}`")
    return 0


def cmd_resume(args: argparse.Namespace) -> int:
    from oracle.errors import NotAnswered
    from oracle.escalation.store import EscalationNotFound
    from oracle._oracle import Oracle, run_sync
    from oracle.cli.render import resume_blocks, show
    from oracle.escalation.resume import aresume_stored

    config = OracleConfig.load(args.config)
    missing = _missing_store(args)
    if missing:
        print(f"error: no escalation store at {missing}: nothing to resume for {args.id!r}", file=sys.stderr)
        return 2
    with _open(args) as store:
        try:
            final = run_sync(aresume_stored(Oracle(config).evaluate_once, store, args.id))
        except NotAnswered as exc:
            print(f"error: {exc}; answer it with `oracle escalations answer {args.id}{_flag(args)}`", file=sys.stderr)
            return 2
        except (EscalationNotFound, ValueError) as exc:
            return _bad_input(exc)
    if args.json:
        print(final.to_json())
    else:
        show(resume_blocks(final))
    return 0
