"""The pytest kind's throughput: HumanEval's tests as pytest modules, sandboxed against plain pytest (issue 27).

    python benchmarks/pytest_kind_bench.py [--per-task 3] [--rounds 1] [--workers 2] [--data PATH] [--json PATH]

The 80 non-reserved HumanEval tasks' ``check(candidate)`` tests are rewritten mechanically as pytest
modules (``pytest_module``): the original test text stays (``METADATA``, ``check``), the entry point
is imported as ``candidate`` (``from solution import <entry_point> as candidate``), the prompt's
helpers the test reads (``poly``, ``encode_cyclic``...) are imported from ``solution`` by name, and
each top-level ``assert`` of ``check`` becomes its own test (``test_assert_0``...); a ``check`` that
is not a plain list of asserts (loops, helper code) becomes one ``test_check`` calling it. The
candidates are the labelled CodeT samples (benchmarks/humaneval_sample.py: non-reserved tasks,
``timeout`` labels skipped), the first ``--per-task`` of each task in hash order (0: all 6,204).

Both arms judge the same candidates with the same modules and the same code (the verifier's own
extraction of each candidate: prompt and completion joined), at ``--workers``, one after another,
each in a fresh child process of this script, in ABBA order (oracle, plain, plain, oracle; per
``--rounds``), so a drift in a shared machine's load hits both alike; each arm's time is the mean
of its runs, and a verdict that changes between an arm's runs is reported:

- ``oracle``: ``VerifierStrategy`` with one ``pytest`` test per task (``timeout_s`` 6), every
  candidate of a task in one ``evaluate()``, at most ``--workers`` sandbox runs in flight across
  tasks (humaneval_harness_bench.py's run budget);
- ``plain``: per candidate, a temporary directory with ``solution.py`` and ``test_task.py`` and one
  ``python -m pytest -q -p no:cacheprovider`` subprocess (timeout 6 s), unsandboxed, from a thread
  pool of ``--workers``: the cost a user pays without us. Its interpreter and pytest are the test
  side's own (the sandbox's interpreter with the pinned, byte-compiled pytest copy on PYTHONPATH and
  plugin autoload off), so the two arms run the same pytest on the same interpreter.

Printed: per arm the wall time, candidates/s and agreement with the CodeT ``passed`` label; the
candidates whose verdict differs between the arms; the time ratio oracle/plain (aim: <= 1.5).
"""

from __future__ import annotations

import argparse
import ast
import asyncio
import json
import os
import subprocess
import sys
import tempfile
import textwrap
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

BENCH_DIR = Path(__file__).resolve().parent
ROOT = BENCH_DIR.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from benchmarks import humaneval_sample  # noqa: E402

ARMS = ("oracle", "plain")
TIMEOUT_S = 6.0
AIM_RATIO = 1.5


# ------------------------------------------------------------------------------------------------
# the rewrite
# ------------------------------------------------------------------------------------------------
def _prompt_names(prompt: str) -> set[str]:
    try:
        tree = ast.parse(prompt)
    except SyntaxError:
        return set()
    names = set()
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.Assign):
            names |= {t.id for t in node.targets if isinstance(t, ast.Name)}
    return names


def pytest_module(problem: dict) -> tuple[str, int]:
    """HumanEval ``problem``'s test as a pytest module, and how many tests it defines."""
    test, entry = problem["test"], problem["entry_point"]
    tree = ast.parse(test)
    check = next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "check")
    param = check.args.args[0].arg if check.args.args else "candidate"
    read = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
    defined = {n.name for n in tree.body if isinstance(n, (ast.FunctionDef, ast.ClassDef))}
    helpers = sorted((read & _prompt_names(problem["prompt"])) - {entry} - defined)
    head = f"from solution import {entry} as {param}\n"
    if helpers:
        head += f"from solution import {', '.join(helpers)}\n"
    body = [s for s in check.body if not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant))]
    lines = test.splitlines()
    if body and all(isinstance(s, ast.Assert) for s in body):
        tests = []
        for i, s in enumerate(body):
            source = textwrap.dedent("\n".join(lines[s.lineno - 1:s.end_lineno]))
            tests.append(f"def test_assert_{i}():\n" + textwrap.indent(source, "    ") + "\n")
        return head + "\n" + test + "\n\n" + "\n\n".join(tests), len(tests)
    return head + "\n" + test + f"\n\ndef test_check():\n    check({param})\n", 1


def _selection(data: Path, per_task: int) -> tuple[dict, list[dict]]:
    problems = humaneval_sample.problems(data)
    rows = humaneval_sample.codet_candidates(data, 10**9)
    if per_task > 0:
        kept, seen = [], {}
        for r in rows:
            if seen.get(r["task_id"], 0) < per_task:
                seen[r["task_id"]] = seen.get(r["task_id"], 0) + 1
                kept.append(r)
        rows = kept
    return problems, rows


def _items(problems: dict, rows: list[dict]):
    """(task, trajectories, module) per task, in sample order."""
    from oracle import Task, Trajectory

    items = []
    for task_id, group in humaneval_sample.by_task(rows).items():
        p = problems[task_id]
        module, _n = pytest_module(p)
        task = Task(id=task_id, prompt=p["prompt"], entry_point=p["entry_point"], language="python",
                    tests=[{"kind": "pytest", "name": "humaneval", "code": module, "timeout_s": TIMEOUT_S}])
        items.append((task, [Trajectory(id=r["hash"], code=r["completion"]) for r in group], module))
    return items


# ------------------------------------------------------------------------------------------------
# arms (child processes)
# ------------------------------------------------------------------------------------------------
def oracle_child(args: argparse.Namespace) -> dict:
    from benchmarks.humaneval_harness_bench import _run_verifier
    from oracle import OracleConfig
    from oracle.strategies.verifier.strategy import VerifierStrategy

    problems, rows = _selection(Path(args.data), args.per_task)
    items = _items(problems, rows)
    config = OracleConfig(verifier={"workers": args.workers})
    strategy = VerifierStrategy()
    started = time.perf_counter()
    results = asyncio.run(_run_verifier([(t, trs) for t, trs, _m in items], config, strategy, args.workers, "runs"))
    wall = time.perf_counter() - started
    strategy.close()
    out, failed, versions = [], [], set()
    for (task, trajectories, _m), result in zip(items, results):
        run = result.provenance.execution
        versions.add(f"{run.backend} / pytest {run.pytest_version}" if run else "none")
        if result.status.value != "ok":
            failed.append({"task_id": task.id, "error": str(result.error)[:300]})
        by_id = {c.id: c for c in result.candidates}
        for t in trajectories:
            c = by_id.get(t.id)
            out.append({"hash": t.id, "verdict": None if c is None else c.passed,
                        "message": "" if c is None or c.passed else str(c.details.get("summary", ""))[:300]})
    return {"arm": "oracle", "wall_s": wall, "candidates": out,
            "info": {"failed_tasks": failed, "backends": sorted(versions), "tasks": len(items)}}


def plain_child(args: argparse.Namespace) -> dict:
    from oracle import OracleConfig
    from oracle.sandbox import pinned_pytest
    from oracle.strategies.verifier.extract import extract_code
    from oracle.strategies.verifier.strategy import find_interpreter

    problems, rows = _selection(Path(args.data), args.per_task)
    items = _items(problems, rows)
    python = find_interpreter("python", OracleConfig().verifier)
    copy = pinned_pytest.pinned(python)
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "PYTHONPATH": copy.path, "LANG": "C.UTF-8",
           "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1", "PYTHONDONTWRITEBYTECODE": "1"}
    jobs = []
    for task, trajectories, module in items:
        for t in trajectories:
            code = extract_code(t, task).code  # the same code the oracle arm runs
            jobs.append((t.id, code, module))

    def job(spec) -> dict:
        tid, code, module = spec
        if code is None:
            return {"hash": tid, "verdict": False, "message": "no code"}
        with tempfile.TemporaryDirectory(prefix="plain-pytest-") as tmp:
            Path(tmp, "solution.py").write_text(code)
            Path(tmp, "test_task.py").write_text(module)
            try:
                proc = subprocess.run([python, "-m", "pytest", "-q", "-p", "no:cacheprovider", "test_task.py"],
                                      cwd=tmp, env={**env, "HOME": tmp, "TMPDIR": tmp}, capture_output=True,
                                      timeout=TIMEOUT_S, stdin=subprocess.DEVNULL)
            except subprocess.TimeoutExpired:
                return {"hash": tid, "verdict": False, "message": "timeout"}
        tail = proc.stdout.decode(errors="replace").strip().splitlines()[-1:] or [""]
        return {"hash": tid, "verdict": proc.returncode == 0, "message": "" if proc.returncode == 0 else tail[0][:300]}

    started = time.perf_counter()
    with ThreadPoolExecutor(max_workers=args.workers) as pool:
        out = list(pool.map(job, jobs))
    wall = time.perf_counter() - started
    return {"arm": "plain", "wall_s": wall, "candidates": out,
            "info": {"python": python, "pytest": copy.version, "tasks": len(items)}}


# ------------------------------------------------------------------------------------------------
# parent
# ------------------------------------------------------------------------------------------------
def _run_child(arm: str, args: argparse.Namespace, data: Path) -> dict:
    with tempfile.TemporaryDirectory(prefix="pytest-kind-bench-") as tmp:
        out = Path(tmp) / "out.json"
        cmd = [sys.executable, str(Path(__file__).resolve()), "--child", arm, "--child-out", str(out),
               "--data", str(data), "--per-task", str(args.per_task), "--workers", str(args.workers)]
        print(f"[{arm}] running ...", file=sys.stderr, flush=True)
        load = os.getloadavg()[0]
        proc = subprocess.run(cmd, cwd=ROOT)
        if proc.returncode != 0 or not out.exists():
            raise SystemExit(f"arm {arm!r} failed (exit {proc.returncode})")
        raw = json.loads(out.read_text())
        raw["info"]["loadavg_1min_before_after"] = [round(load, 2), round(os.getloadavg()[0], 2)]
        return raw


def parent(args: argparse.Namespace) -> None:
    data = humaneval_sample.data_dir(args.data)
    problems, rows = _selection(data, args.per_task)
    labels = {r["hash"]: bool(r["passed"]) for r in rows}
    modules = {tid: pytest_module(problems[tid]) for tid in humaneval_sample.by_task(rows)}
    split = sum(1 for _m, n in modules.values() if n > 1)
    report: dict = {"candidates": len(rows), "tasks": len(modules), "workers": args.workers,
                    "machine_cores": os.cpu_count(), "label_passed": sum(labels.values()),
                    "tests_per_module": sum(n for _m, n in modules.values()), "modules_split_per_assert": split,
                    "arms": {}}
    verdicts: dict[str, dict[str, bool | None]] = {}
    runs: dict[str, list[dict]] = {arm: [] for arm in ARMS}
    order = [a for pair in ((ARMS[0], ARMS[1], ARMS[1], ARMS[0]),) * args.rounds for a in pair]
    for arm in order:  # ABBA: a drift in the machine's load hits both arms alike
        runs[arm].append(_run_child(arm, args, data))
    report["order"] = order
    for arm in ARMS:
        raw = runs[arm][0]
        got = {c["hash"]: c["verdict"] for c in raw["candidates"]}
        if set(got) != set(labels):
            raise SystemExit(f"arm {arm!r} judged a different selection")
        repeats = [{c["hash"]: c["verdict"] for c in r["candidates"]} for r in runs[arm][1:]]
        flips = sorted({h for again in repeats for h in got if again.get(h) != got[h]})
        verdicts[arm] = got
        walls = [r["wall_s"] for r in runs[arm]]
        raw = {**raw, "wall_s": sum(walls) / len(walls)}
        raw["info"]["loadavg_1min_before_after"] = [r["info"]["loadavg_1min_before_after"] for r in runs[arm]]
        agree = sum(1 for h, v in got.items() if v is not None and v == labels[h])
        report["arms"][arm] = {
            "wall_s": round(raw["wall_s"], 2),
            "candidates_per_s": round(len(got) / raw["wall_s"], 2),
            "walls_s": [round(w, 2) for w in walls],
            "verdict_flips_between_repeats": flips,
            "agree": agree,
            "agree_pct": round(100 * agree / len(got), 2),
            "passed": sum(1 for v in got.values() if v is True),
            "no_verdict": sum(1 for v in got.values() if v is None),
            "disagreements": [
                {"hash": c["hash"], "label": labels[c["hash"]], "verdict": c["verdict"], "message": c["message"]}
                for c in raw["candidates"]
                if c["verdict"] != labels[c["hash"]]
            ][:20],
            "info": raw["info"],
        }
    differ = sorted(h for h in labels if verdicts["oracle"][h] != verdicts["plain"][h])
    ratio = report["arms"]["oracle"]["wall_s"] / report["arms"]["plain"]["wall_s"]
    report["ratio_oracle_over_plain_wall"] = round(ratio, 3)
    report["verdicts_differing_between_arms"] = differ
    print(f"HumanEval as pytest: {len(rows)} CodeT candidates, {len(modules)} tasks ({report['tests_per_module']} "
          f"tests; {split} modules split per assert), {args.workers} workers, {os.cpu_count()} cores")
    for arm, s in report["arms"].items():
        print(f"  {arm:7s} wall {s['wall_s']:8.2f} s  {s['candidates_per_s']:7.2f} cand/s  label agreement "
              f"{s['agree']}/{len(rows)} ({s['agree_pct']:.2f} %)  passed {s['passed']}  no verdict {s['no_verdict']}"
              f"  (runs {s['walls_s']} s; 1-min load before/after each: {s['info']['loadavg_1min_before_after']}"
              f"; verdict flips between repeats: {len(s['verdict_flips_between_repeats'])})")
    print(f"  verdicts that differ between the arms: {len(differ)}" + (f" {differ[:5]}" if differ else ""))
    print(f"  time ratio oracle/plain: {ratio:.3f}x ({'within' if ratio <= AIM_RATIO else 'ABOVE'} the aim of "
          f"{AIM_RATIO}x)")
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=2, sort_keys=True) + "\n")
        print(f"JSON written to {args.json}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--per-task", type=int, default=3, help="candidates per task, first by hash (0: all)")
    parser.add_argument("--rounds", type=int, default=1, help="ABBA rounds (each arm runs twice per round)")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--data", default=None, help=f"shared data dir (else ${humaneval_sample.DATA_ENV}, "
                                                     "else ../shared/data next to the repository)")
    parser.add_argument("--json", default=None, metavar="PATH", help="also write the full report here")
    parser.add_argument("--child", choices=ARMS, help=argparse.SUPPRESS)
    parser.add_argument("--child-out", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.per_task < 0 or args.workers < 1 or args.rounds < 1:
        parser.error("--per-task must be >= 0, --workers and --rounds >= 1")
    if args.child:
        raw = oracle_child(args) if args.child == "oracle" else plain_child(args)
        Path(args.child_out).write_text(json.dumps(raw))
        return
    parent(args)


if __name__ == "__main__":
    main()
