"""Routing speed: this tree against a baseline commit, side by side in one run (issue 12).

    python benchmarks/route_bench.py [--baseline-ref 90164d9] [--max-ratio 0.6] [--repeat 1] [--rounds 12]
        [--size-repeat 40] [--data PATH] [--json PATH]

What is timed: ``PolicyChain.route(task, trajectories)`` once, the FIRST route of objects parsed
fresh for that route (``parse_task`` on a new ``json.loads`` of the task's JSON text, outside the
timed region). No route ever sees an object another route saw, so nothing cached on a task,
trajectory or text from an earlier route can count. Wall time (perf_counter) and this thread's CPU
time (thread_time, steadier on a busy machine) are both recorded.

Arms: ``current`` (this working tree) and ``baseline`` (``--baseline-ref``, default 90164d9, checked
out with ``git worktree add --detach`` into a temporary directory and put first on the child's
``sys.path``, its top-level policies/ and strategies/ loaded as ``oracle.policies`` /
``oracle.strategies``; removed afterwards). Each arm is one child process that stays up; the parent asks
them in turn for ``--rounds`` short passes over the suite (about a tenth of a second each), each
arm first in every other round, so a change in the machine's speed (a shared VM's speed swings by
half within seconds) hits both arms alike. Both arms convert the suite with THIS tree's
benchmarks/suite_tasks.py.

Measured per arm:

- the dev suite (<data>/suite/dev_suite.jsonl, 308 items): median and p90 of the first route over
  ``--repeat`` fresh parses of every item; current <= ``--max-ratio`` x baseline (median) passes
  (0.6 against 90164d9 was issue 12's target; as a regression check against a recent ref, 1.25);
- flatness: synthetic tasks with ONE field at 100 B, 10 KB and 1 MB (the prompt, every criterion,
  every answer, every execution output; the other fields small), median first route over
  ``--size-repeat`` fresh parses each;
- agreement: the evaluator each arm picks for each dev-suite item (they should be the same).

The data directory is ``--data PATH``, else ``$ORACLE_DATA_DIR``, else ../shared/data next to the
repository. The reserved records (suite/reserved_keys.json) are never read; the dev suite excludes
them by construction.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

BENCH_DIR = Path(__file__).resolve().parent
ROOT = BENCH_DIR.parent
DEFAULT_BASELINE = "90164d9"
REQUIRED_RATIO = 0.6
SIZES = {"100 B": 100, "10 KB": 10_000, "1 MB": 1_000_000}
FIELDS = ("prompt", "criteria", "answers", "outputs")


def _load_by_path(name: str, path: Path):
    """Import one of this tree's benchmark helpers by file path (they import nothing from oracle)."""
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


# ------------------------------------------------------------------------------------------------
# child: time one arm
# ------------------------------------------------------------------------------------------------
def sized_task(field: str, size: int) -> dict:
    """A small code task with tests and a criterion, with ``field`` grown to ``size`` characters."""
    filler = ("Explain why the loop is slow and return the sum of the list. " * (size // 60 + 1))[:size]
    task = {"id": f"{field}-{size}", "prompt": "Fix the N+1 query in list_orders().",
            "criteria": ["Does it keep the public signature?"], "language": "python",
            "tests": [{"kind": "assert", "code": "assert list_orders() == []"}]}
    trajectories = [{"id": f"c{i}", "answer": "def list_orders():\n    return []\n", "output": "1 passed"}
                    for i in range(3)]
    if field == "prompt":
        task["prompt"] = filler
    elif field == "criteria":
        task["criteria"] = [filler + "?", "Is it " + filler]
    elif field == "answers":
        for t in trajectories:
            t["answer"] = filler
    elif field == "outputs":
        for t in trajectories:
            t["output"] = filler
    return {"task": task, "trajectories": trajectories}


def _first_routes(chain, parse_task, texts: list[str], repeat: int) -> tuple[list[float], list[float], list]:
    wall, cpu, evaluators = [], [], []
    for r in range(repeat):
        for text in texts:
            item = parse_task(json.loads(text))  # fresh objects, parsed outside the timed region
            c0, t0 = time.thread_time_ns(), time.perf_counter_ns()
            route = chain.route(item.task, item.trajectories)
            t1, c1 = time.perf_counter_ns(), time.thread_time_ns()
            wall.append((t1 - t0) / 1000)
            cpu.append((c1 - c0) / 1000)
            if r == 0:
                evaluators.append(route.evaluator)
    return wall, cpu, evaluators


def _import_tree(root: Path) -> dict[str, str]:
    """Import oracle, oracle.policies and oracle.strategies from the tree at ``root``; where each came from.

    ``root`` goes first on ``sys.path``. A tree whose policies/ and strategies/ sit at its top (mapped
    into ``oracle`` by the build configuration) has them loaded from there, since the editable install
    on ``sys.path`` would otherwise supply its own tree's. A tree that is not on sys.path's first entry
    fails here, so an arm never measures another tree's code.
    """
    sys.path.insert(0, str(root))
    import oracle

    for name in ("policies", "strategies"):
        folder = root / name
        if (folder / "__init__.py").is_file() and not (root / "oracle" / name).exists():
            spec = importlib.util.spec_from_file_location(f"oracle.{name}", folder / "__init__.py",
                                                          submodule_search_locations=[str(folder)])
            module = importlib.util.module_from_spec(spec)
            sys.modules[spec.name] = module
            spec.loader.exec_module(module)
            setattr(oracle, name, module)
    import oracle.policies
    import oracle.strategies

    where = {m.__name__: m.__file__ for m in (oracle, oracle.policies, oracle.strategies)}
    for name, path in where.items():
        assert Path(path).resolve().is_relative_to(root.resolve()), (name, path, str(root))
    return where


def _chain_class():
    """The policy chain of the tree on sys.path (oracle.router, then oracle.routing.chain, now
    oracle.routing._chain)."""
    for name in ("oracle.routing._chain", "oracle.routing.chain", "oracle.router"):
        try:
            return importlib.import_module(name).PolicyChain
        except ImportError:
            continue
    raise ImportError("no PolicyChain in this tree")


def child(args: argparse.Namespace) -> None:
    """Serve timing passes on request: one JSON line on stdout per command read from stdin."""
    _import_tree(Path(args.import_root))
    suite_mod = _load_by_path("_bench_suite_tasks", BENCH_DIR / "suite_tasks.py")
    _load_by_path("humaneval_sample", BENCH_DIR / "humaneval_sample.py")
    from oracle.config.model import OracleConfig
    from oracle.tasks.files import parse_task
    import oracle

    imported_from = str(Path(oracle.__file__).resolve().parent.parent)
    chain = _chain_class()(OracleConfig.load(env=False))
    texts = [json.dumps(data) for _, data in suite_mod.suite_tasks(Path(args.suite))]
    # Warm the code paths (not the objects: every timed route gets new ones).
    _first_routes(chain, parse_task, texts[:100], 1)
    out = sys.stdout
    sys.stdout = sys.stderr  # nothing but the replies goes to the parent's pipe
    out.write(json.dumps({"imported_from": imported_from}) + "\n")
    out.flush()
    for line in sys.stdin:
        command = line.strip()
        if command == "suite":
            wall, cpu, evaluators = _first_routes(chain, parse_task, texts, args.repeat)
            reply: dict = {"wall_us": wall, "cpu_us": cpu, "evaluators": evaluators}
        elif command == "sizes":
            reply = {"sizes": {}}
            for field in FIELDS:
                for label, size in SIZES.items():
                    text = json.dumps(sized_task(field, size))
                    w, c, _ = _first_routes(chain, parse_task, [text], args.size_repeat)
                    reply["sizes"].setdefault(field, {})[label] = statistics.median(w)
                    reply["sizes"][field][label + " cpu"] = statistics.median(c)
        else:
            return
        out.write(json.dumps(reply) + "\n")
        out.flush()


# ------------------------------------------------------------------------------------------------
# parent
# ------------------------------------------------------------------------------------------------
def _git(*cmd: str) -> str:
    return subprocess.run(["git", *cmd], cwd=ROOT, check=True, capture_output=True, text=True).stdout.strip()


class _Arm:
    """One arm's child process, kept alive across rounds so the arms can alternate quickly."""

    def __init__(self, arm: str, import_root: Path, args: argparse.Namespace, suite: Path, cwd: str) -> None:
        self.name = arm
        cmd = [sys.executable, str(Path(__file__).resolve()), "--child", arm, "--import-root", str(import_root),
               "--suite", str(suite), "--repeat", str(args.repeat), "--size-repeat", str(args.size_repeat)]
        self.proc = subprocess.Popen(cmd, cwd=cwd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        self.imported_from = self._read()["imported_from"]

    def _read(self) -> dict:
        line = self.proc.stdout.readline()
        if not line:
            raise SystemExit(f"arm {self.name!r} failed (exit {self.proc.wait()})")
        return json.loads(line)

    def ask(self, command: str) -> dict:
        self.proc.stdin.write(command + "\n")
        self.proc.stdin.flush()
        reply = self._read()
        reply["loadavg"] = round(os.getloadavg()[0], 2)
        return reply

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.stdin.close()
            self.proc.wait(timeout=30)


def _pct(values: list[float], q: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, int(len(values) * q))]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--baseline-ref", default=DEFAULT_BASELINE)
    ap.add_argument("--max-ratio", type=float, default=REQUIRED_RATIO,
                    help="the median ratio current / baseline that passes")
    ap.add_argument("--repeat", type=int, default=1, help="fresh parses of each dev-suite item per round")
    ap.add_argument("--rounds", type=int, default=12, help="alternating rounds of both arms")
    ap.add_argument("--size-repeat", type=int, default=40, help="fresh parses per field and size")
    ap.add_argument("--data", help="shared data directory (default: $ORACLE_DATA_DIR, else ../shared/data)")
    ap.add_argument("--json", help="also write the summary here")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    ap.add_argument("--import-root", help=argparse.SUPPRESS)
    ap.add_argument("--suite", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        child(args)
        return 0

    sys.path.insert(0, str(ROOT))
    from benchmarks.suite_tasks import suite_path

    suite = suite_path(args.data)
    commit = _git("rev-parse", "--verify", f"{args.baseline_ref}^{{commit}}")
    tmp = Path(tempfile.mkdtemp(prefix="route-baseline-"))
    worktree = tmp / "tree"
    _git("worktree", "add", "--detach", str(worktree), commit)
    runs: dict[str, list[dict]] = {"baseline": [], "current": []}
    sizes_runs: dict[str, list[dict]] = {"baseline": [], "current": []}
    arms: dict[str, _Arm] = {}
    try:
        with tempfile.TemporaryDirectory(prefix="route-bench-") as cwd:
            arms = {"baseline": _Arm("baseline", worktree, args, suite, cwd),
                    "current": _Arm("current", ROOT, args, suite, cwd)}
            print(f"{args.rounds} rounds, arms alternating (load {os.getloadavg()[0]:.2f}) ...",
                  file=sys.stderr, flush=True)
            for r in range(args.rounds):
                # Short passes that alternate, each arm first in every other round: a change in the
                # machine's speed (frequent on a shared VM) hits both arms alike.
                for name in (("baseline", "current") if r % 2 == 0 else ("current", "baseline")):
                    runs[name].append(arms[name].ask("suite"))
            for r in range(max(1, min(3, args.rounds))):
                for name in (("baseline", "current") if r % 2 == 0 else ("current", "baseline")):
                    sizes_runs[name].append(arms[name].ask("sizes"))
    finally:
        for arm in arms.values():
            arm.close()
        subprocess.run(["git", "worktree", "remove", "--force", str(worktree)], cwd=ROOT, capture_output=True)
        shutil.rmtree(tmp, ignore_errors=True)
        subprocess.run(["git", "worktree", "prune"], cwd=ROOT, capture_output=True)

    summary: dict = {"baseline_ref": args.baseline_ref, "baseline_commit": commit, "suite": str(suite),
                     "repeat": args.repeat, "rounds": args.rounds, "arms": {}}
    for arm, rs in runs.items():
        wall = [x for r in rs for x in r["wall_us"]]
        cpu = [x for r in rs for x in r["cpu_us"]]
        ss = sizes_runs[arm]
        sizes = {f: {k: statistics.median(r["sizes"][f][k] for r in ss) for k in ss[0]["sizes"][f]}
                 for f in FIELDS}
        summary["arms"][arm] = {
            "imported_from": arms[arm].imported_from, "routes": len(wall),
            "median_us": round(statistics.median(wall), 1), "p90_us": round(_pct(wall, 0.9), 1),
            "cpu_median_us": round(statistics.median(cpu), 1),
            "round_medians_us": [round(statistics.median(r["wall_us"]), 1) for r in rs],
            "loadavg": [r["loadavg"] for r in rs], "sizes_us": sizes, "evaluators": rs[0]["evaluators"]}
    base, cur = summary["arms"]["baseline"], summary["arms"]["current"]
    same = sum(a == b for a, b in zip(base.pop("evaluators"), cur.pop("evaluators")))
    summary["same_evaluator"] = same
    summary["ratio_median"] = round(cur["median_us"] / base["median_us"], 3)
    summary["ratio_cpu_median"] = round(cur["cpu_median_us"] / base["cpu_median_us"], 3)
    summary["round_ratios"] = [round(c / b, 3) for c, b in zip(cur["round_medians_us"], base["round_medians_us"])]

    n_items = base["routes"] // (args.repeat * args.rounds)
    print(f"dev suite: {n_items} items x {args.repeat} fresh parses x {args.rounds} rounds per arm; "
          f"first route of fresh objects")
    print(f"{'arm':<10}{'median us':>11}{'p90 us':>9}{'cpu med us':>12}   rounds (median us)")
    for arm in ("baseline", "current"):
        a = summary["arms"][arm]
        print(f"{arm:<10}{a['median_us']:>11}{a['p90_us']:>9}{a['cpu_median_us']:>12}   {a['round_medians_us']}")
    print(f"per-round ratio (current / baseline): {summary['round_ratios']}, median "
          f"{statistics.median(summary['round_ratios']):.3f}; load 1-min {base['loadavg'][0]} -> {cur['loadavg'][-1]}")
    verdict = "ok" if summary["ratio_median"] <= args.max_ratio else "NOT MET"
    print(f"current / baseline ({args.baseline_ref} = {commit[:10]}): median {summary['ratio_median']}, "
          f"cpu median {summary['ratio_cpu_median']} (required <= {args.max_ratio}: {verdict}); "
          f"same evaluator on {same}/{n_items} items")
    print("\nfirst route by field size (median us; one field grown, the others small):")
    print(f"{'field':<10}{'arm':<10}" + "".join(f"{k:>10}" for k in SIZES))
    for field in FIELDS:
        for arm in ("baseline", "current"):
            s = summary["arms"][arm]["sizes_us"][field]
            print(f"{field:<10}{arm:<10}" + "".join(f"{s[k]:>10.1f}" for k in SIZES))
    if args.json:
        Path(args.json).write_text(json.dumps(summary, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
