"""``oracle rubric new|hash|release|promote|rollback|list|show|diff``: rubric drafts and releases.

Exit codes: 0 done (``release`` of a draft unchanged since the latest release makes no version and
says so), 2 bad input (unknown rubric, invalid draft, evidence for another draft, a tampered
release), 3 a release refused by a gate (the failing metric is named; ``--force`` releases anyway
and records it) or by evidence with fewer answered items than ``rubrics.min_evidence_items``.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from oracle.config.model import OracleConfig


def _store(args: argparse.Namespace):  # -> RubricStore, imported lazily
    from oracle.rubrics.store import RubricStore

    cfg = OracleConfig.load(getattr(args, "config", None))
    root = args.dir or cfg.rubrics.dir
    return RubricStore(root, gates=list(cfg.rubrics.gates), min_evidence_items=cfg.rubrics.min_evidence_items)


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("rubric", help="rubric drafts, releases with evidence and gates, promote/rollback")
    rsub = p.add_subparsers(dest="rubric_command", metavar="ACTION")
    rsub.required = True

    def add(name: str, help_text: str) -> argparse.ArgumentParser:
        q = rsub.add_parser(name, help=help_text)
        q.add_argument("--dir", help="rubric directory (default: rubrics.dir of the config, .oracle/rubrics)")
        return q

    q = add("new", "create a draft (a plain YAML file to edit by hand)")
    q.add_argument("name")
    q.add_argument("--from", dest="source", help="a task file (its criteria/questions) or a rubric file")
    q.set_defaults(func=cmd_new)

    q = add("hash", "the draft's content hash (what evidence must name)")
    q.add_argument("name")
    q.set_defaults(func=cmd_hash)

    q = add("release", "freeze the draft as the next version, with its evidence")
    q.add_argument("name")
    q.add_argument("--evidence", required=True, help="an `oracle compare` directory or an `oracle calibrate` file")
    q.add_argument("--arm", default="routed", help="which comparison arm's metrics are the evidence (default routed)")
    q.add_argument("--force", action="store_true", help="release although a gate fails (recorded in the release)")
    q.set_defaults(func=cmd_release)

    q = add("promote", "point `current` at a released version")
    q.add_argument("name")
    q.add_argument("version", type=_version)
    q.set_defaults(func=cmd_promote)

    q = add("rollback", "move `current` back to where it was before the last promote")
    q.add_argument("name")
    q.set_defaults(func=cmd_rollback)

    q = add("list", "rubrics, their versions and the current one")
    q.add_argument("--json", action="store_true")
    q.set_defaults(func=cmd_list)

    q = add("show", "a release (NAME, NAME@N) or the draft (NAME@draft)")
    q.add_argument("spec")
    q.set_defaults(func=cmd_show)

    q = add("diff", "unified diff between two of NAME@N / NAME@draft / NAME")
    q.add_argument("a")
    q.add_argument("b")
    q.set_defaults(func=cmd_diff)


def _version(text: str) -> int:
    """argparse type: a release number in ASCII digits (``int`` would take ``١`` or ``+1``)."""
    from oracle.rubrics.model import parse_version

    try:
        return parse_version(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _guard(fn):  # maps rubric errors to exit codes
    def run(args: argparse.Namespace) -> int:
        from oracle.rubrics.errors import RubricError, RubricEvidenceTooSmall, RubricGateFailed

        try:
            return int(fn(args) or 0)
        except (RubricGateFailed, RubricEvidenceTooSmall) as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 3
        except RubricError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 2
    return run


@_guard
def cmd_new(args: argparse.Namespace) -> int:
    from oracle.rubrics.store import content_from_task_file

    store = _store(args)
    content = content_from_task_file(Path(args.source)) if args.source else None
    path = store.new(args.name, content)
    print(f"draft {args.name}: {path} (edit it, then `oracle rubric hash {args.name}`)")
    return 0


@_guard
def cmd_hash(args: argparse.Namespace) -> int:
    print(_store(args).draft(args.name).content_hash())
    return 0


@_guard
def cmd_release(args: argparse.Namespace) -> int:
    from oracle.rubrics.evidence import read_evidence

    store = _store(args)
    same = store.unchanged(args.name)
    if same is not None:  # nothing new to freeze: the evidence is not read, no version is made
        print(f"{args.name}: unchanged, still v{same} (the draft's content is v{same}'s)")
        return 0
    evidence = read_evidence(args.evidence, arm=args.arm, rubric=args.name)
    rel = store.release(args.name, evidence, force=args.force)
    if not store.gates:
        print("warning: no release gates are configured (rubrics.gates): the evidence was recorded, not checked",
              file=sys.stderr)
    note = " (FORCED past failing gates)" if rel.forced else ""
    print(f"released {rel.name} v{rel.version}{note}: content {rel.content_hash[:12]}, evidence {rel.evidence.status} "
          f"({rel.evidence.answered_items} answered items)")
    for g in rel.evidence.gates:
        print(f"  gate {g.metric} {g.op} {g.required:g}: {'pass' if g.passed else 'FAIL'} (actual {g.actual})")
    return 0


@_guard
def cmd_promote(args: argparse.Namespace) -> int:
    _store(args).promote(args.name, args.version)
    print(f"{args.name}: current -> v{args.version}")
    return 0


@_guard
def cmd_rollback(args: argparse.Namespace) -> int:
    to = _store(args).rollback(args.name)
    print(f"{args.name}: current -> {'v' + str(to) if to is not None else 'none'}")
    return 0


@_guard
def cmd_list(args: argparse.Namespace) -> int:
    store = _store(args)
    rows = []
    for name in store.names():
        rows.append({"name": name, "versions": store.versions(name), "current": store.current(name),
                     "draft": store.draft_path(name).exists()})
    if args.json:
        for row in rows:
            print(json.dumps(row, sort_keys=True))
        return 0
    if not rows:
        print(f"no rubrics in {store.root}")
    for row in rows:
        cur = f"v{row['current']}" if row["current"] is not None else "-"
        print(f"{row['name']:<24} current {cur:<6} versions {row['versions'] or '-'}  draft "
              f"{'yes' if row['draft'] else 'no'}")
    return 0


@_guard
def cmd_show(args: argparse.Namespace) -> int:
    from oracle.rubrics.store import split_spec

    store = _store(args)
    name, version = split_spec(args.spec)
    if version == "draft":
        content, ref = store.resolve(args.spec)
        print(json.dumps({"ref": ref.model_dump(mode="json"), "content": content.model_dump(mode="json")},
                         indent=2, sort_keys=True))
        return 0
    rel = store.load(name, version)
    print(json.dumps(rel.model_dump(mode="json"), indent=2, sort_keys=True))
    return 0


@_guard
def cmd_diff(args: argparse.Namespace) -> int:
    sys.stdout.write(_store(args).diff(args.a, args.b))
    return 0
