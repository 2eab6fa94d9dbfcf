"""Sandbox speed: per-run overhead of ``assert 1+1==2`` per backend, and HumanEval throughput and cost.

    python benchmarks/sandbox_bench.py [--runs 30] [--candidates 100] [--data PATH]

Overhead is the median wall time of one full run (slot, temp dir, cgroup, spawn, wait, cleanup),
so it includes the interpreter start. Throughput evaluates the first N labelled CodeT candidates of
NON-reserved HumanEval tasks (the sample of benchmarks/humaneval_sample.py, shared with
humaneval_harness_bench.py) with one worker and with every core, one candidate per evaluate() call.
Per-test cost is each test run's ``duration_ms`` (the sandbox run); per-candidate cost is each
evaluate() call's ``latency_ms`` (sandbox setup, every test of the candidate, interpretation); both
as mean and median ms, next to wall x workers / candidates. The data location is ``--data PATH``,
else ``$ORACLE_DATA_DIR``, else ../shared/data next to the repository (``oracle._internal.data_paths``).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from oracle.config.model import OracleConfig
from oracle._internal.data_paths import DATA_ENV, DataNotFound, shared_data_dir
from oracle.strategies.protocol import EvaluationContext
from oracle.tasks.task import Task, Trajectory
from oracle.strategies.verifier.strategy import VerifierStrategy
from oracle.sandbox import RunRequest, Sandbox, probe

from benchmarks import humaneval_sample

PYTHON = "/usr/bin/python3.11"


async def overhead(backend: str, runs: int) -> float:
    sandbox = Sandbox(backend=backend)  # landlock and namespaces need no opt-in
    times = []
    for i in range(runs + 2):
        start = time.perf_counter()
        out = await sandbox.run(RunRequest(command=[PYTHON, "-I", "-c", "assert 1+1==2"]))
        if i >= 2:  # the first runs of a slot create its cgroups
            times.append(time.perf_counter() - start)
        assert out.exit_code == 0, out
    return statistics.median(times) * 1000


def humaneval_items(data: Path, n: int) -> list[tuple[Task, list[Trajectory]]]:
    problems = humaneval_sample.problems(data)
    by_task = humaneval_sample.by_task(humaneval_sample.codet_candidates(data, n))
    return [(Task(id=t, prompt=problems[t]["prompt"], entry_point=problems[t]["entry_point"],
                  tests=[{"kind": "check", "code": problems[t]["test"], "timeout_s": 6}]),
             [Trajectory(id=r["hash"], code=r["completion"]) for r in rows])
            for t, rows in by_task.items()]


def _ms(values: list[float]) -> dict:
    return {"mean": round(statistics.fmean(values), 1), "median": round(statistics.median(values), 1)} \
        if values else {"mean": None, "median": None}


async def throughput(items, workers: int) -> dict:
    """Every candidate in its own evaluate() call, at most ``workers`` calls (and runs) in flight."""
    config = OracleConfig(verifier={"workers": workers})
    strategy = VerifierStrategy()
    flat = [(t, tr) for t, trs in items for tr in trs]
    sem = asyncio.Semaphore(workers)

    async def one(task, trajectory):
        async with sem:
            return await strategy.evaluate(EvaluationContext(task=task, trajectories=(trajectory,), config=config))

    start = time.perf_counter()
    results = await asyncio.gather(*(one(t, tr) for t, tr in flat))
    elapsed = time.perf_counter() - start
    assert all(r.status.value == "ok" for r in results), [r.error for r in results if r.error]
    per_test = [x["duration_ms"] for r in results for c in r.candidates for x in c.details.get("tests", [])]
    per_candidate = [r.latency_ms for r in results]
    return {"runs_per_s": round(len(flat) / elapsed, 1), "per_test_ms": _ms(per_test),
            "per_candidate_ms": _ms(per_candidate),
            "wall_ms_x_workers_per_candidate": round(elapsed * 1000 * workers / len(flat), 1)}


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=30)
    parser.add_argument("--candidates", type=int, default=100)
    parser.add_argument("--data", default=None, help=f"shared data dir (else ${DATA_ENV}, "
                                                     "else ../shared/data next to the repository)")
    args = parser.parse_args()
    try:
        data = shared_data_dir(args.data, required=(humaneval_sample.CODET_FILE, humaneval_sample.HUMANEVAL_FILE,
                                                    humaneval_sample.RESERVED_FILE))
    except DataNotFound as exc:
        print(f"error: {exc}", file=sys.stderr)
        raise SystemExit(2) from None
    layers = probe()
    report: dict = {"machine_cores": os.cpu_count(), "layers": layers.describe(), "overhead_ms": {}}
    for backend in ("nsjail", "bubblewrap", "landlock"):
        if backend in layers.available:
            report["overhead_ms"][backend] = round(await overhead(backend, args.runs), 1)
    items = humaneval_items(data, args.candidates)
    report["humaneval_candidates"] = sum(len(trs) for _, trs in items)
    report["humaneval_tests_per_candidate"] = 1
    for workers in (1, os.cpu_count() or 1):
        key = f"{workers}_worker{'s' if workers > 1 else ''}"
        figures = await throughput(items, workers)
        report[f"runs_per_s_{key}"] = figures.pop("runs_per_s")
        report[f"humaneval_cost_{key}"] = figures
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    asyncio.run(main())
