"""Sandbox speed: per-run overhead of ``assert 1+1==2`` per backend, and HumanEval throughput.

    python benchmarks/sandbox_bench.py [--runs 30] [--candidates 100]

Overhead is the median wall time of one full run (slot, temp dir, cgroup, spawn, wait, cleanup),
so it includes the interpreter start. Throughput evaluates the first N labelled CodeT candidates of
NON-reserved HumanEval tasks with one worker and with every core.
"""

from __future__ import annotations

import argparse
import asyncio
import gzip
import json
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from oracle.config import OracleConfig  # noqa: E402
from oracle.strategy import EvaluationContext  # noqa: E402
from oracle.task import Task, Trajectory  # noqa: E402
from strategies.verifier import VerifierStrategy  # noqa: E402
from strategies.verifier.sandbox import RunRequest, Sandbox, probe  # noqa: E402

DATA = Path("/work/shared/data")
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


def humaneval_items(n: int) -> list[tuple[Task, list[Trajectory]]]:
    reserved = set(json.loads((DATA / "suite" / "reserved_keys.json").read_text())["humaneval_task_ids"])
    problems = {p["task_id"]: p for p in map(json.loads, gzip.open(DATA / "humaneval" / "HumanEval.jsonl.gz", "rt"))}
    rows = [json.loads(line) for line in gzip.open(DATA / "codet" / "HumanEval_codegen16B_per_sample.jsonl.gz", "rt")]
    seen, chosen = set(), []
    for r in sorted(rows, key=lambda r: r["hash"]):
        if r["task_id"] in reserved or r["hash"] in seen or r["error"] == "timeout":
            continue
        seen.add(r["hash"])
        chosen.append(r)
        if len(chosen) == n:
            break
    by_task: dict[str, list[Trajectory]] = {}
    for r in chosen:
        by_task.setdefault(r["task_id"], []).append(Trajectory(id=r["hash"], code=r["completion"]))
    return [(Task(id=t, prompt=problems[t]["prompt"], entry_point=problems[t]["entry_point"],
                  tests=[{"kind": "check", "code": problems[t]["test"], "timeout_s": 6}]), trs)
            for t, trs in by_task.items()]


async def throughput(items, workers: int) -> float:
    config = OracleConfig(verifier={"workers": workers})
    strategy = VerifierStrategy(config)
    n = sum(len(trs) for _, trs in items)
    start = time.perf_counter()
    results = await asyncio.gather(*(strategy.evaluate(EvaluationContext(task=t, trajectories=tuple(trs),
                                                                          config=config)) for t, trs in items))
    elapsed = time.perf_counter() - start
    assert all(r.status.value == "ok" for r in results), [r.error for r in results if r.error]
    return n / elapsed


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=30)
    parser.add_argument("--candidates", type=int, default=100)
    args = parser.parse_args()
    layers = probe()
    report: dict = {"machine_cores": os.cpu_count(), "layers": layers.describe(), "overhead_ms": {}}
    for backend in ("nsjail", "bubblewrap", "landlock"):
        if backend in layers.available:
            report["overhead_ms"][backend] = round(await overhead(backend, args.runs), 1)
    items = humaneval_items(args.candidates)
    # Each evaluate() bounds its own runs; a shared bound across tasks needs one semaphore, so run the
    # tasks one after another and let the strategy's workers parallelise within and across tests.
    report["humaneval_candidates"] = sum(len(trs) for _, trs in items)
    for workers in (1, os.cpu_count() or 1):
        flat = [(t, [tr]) for t, trs in items for tr in trs]
        config_workers = workers
        sem = asyncio.Semaphore(config_workers)

        async def bounded(t, trs, w=config_workers):
            async with sem:
                return await throughput([(t, trs)], w)

        start = time.perf_counter()
        await asyncio.gather(*(bounded(t, trs) for t, trs in flat))
        report[f"runs_per_s_{workers}_worker{'s' if workers > 1 else ''}"] = round(
            len(flat) / (time.perf_counter() - start), 1)
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    asyncio.run(main())
