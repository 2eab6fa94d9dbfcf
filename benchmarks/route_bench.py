"""Routing speed and memory: >= 2,000 varied tasks (dev suite + synthetic), median and p99 per route.

    python benchmarks/route_bench.py [--n 2000] [--repeat 3]

Validation happens once, outside the timed region (as in a real run, where a task is parsed once
and then routed); the timed region is ``PolicyChain.route``: signals, votes, gates, the trace.
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import time
import tracemalloc
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.suite_tasks import suite_tasks  # noqa: E402
from oracle.config import OracleConfig  # noqa: E402
from oracle.router import PolicyChain  # noqa: E402
from oracle.task_file import parse_task  # noqa: E402

WORDS = ("explain the result clearly and return the sum of the list, compare both answers, "
         "write a polite email, is it correct, rate it on a scale of 1 to 10, fix the bug").split()


def synthetic(rng: random.Random, i: int) -> dict:
    task: dict = {"id": f"syn-{i}", "prompt": " ".join(rng.choices(WORDS, k=rng.randint(5, 400)))}
    if rng.random() < 0.3:
        task["tests"] = [{"kind": "assert", "code": "assert f(1) == 2"}]
    if rng.random() < 0.2:
        task["reference"] = "42" if rng.random() < 0.5 else "a long reference answer " * 20
    if rng.random() < 0.25:
        task["criteria"] = rng.sample(["Is it polite?", "Does it cite a source?", "Clarity", "Depth"], 2)
    if rng.random() < 0.15:
        task["questions"] = [{"id": "q", "type": "likelihood", "instructions": "Is it right?"}]
    task["difficulty"] = rng.choice([None, "easy", "medium", "hard"])
    n = rng.randint(1, 6)
    trajs = [{"id": f"c{k}", "answer": " ".join(rng.choices(WORDS, k=rng.randint(1, 60))),
              **({"code": "def f(x):\n    return x + 1"} if rng.random() < 0.3 else {})} for k in range(n)]
    return {"task": task, "trajectories": trajs}


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=2000)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    rng = random.Random(7)
    raw = [data for _, data in suite_tasks()]
    raw += [synthetic(rng, i) for i in range(max(0, args.n - len(raw)))]
    items = [parse_task(d) for d in raw]
    chain = PolicyChain(OracleConfig.load(env=False))
    for item in items[:200]:  # warm-up
        chain.route(item.task, item.trajectories)

    samples_us, cpu_us = [], []
    by_kind: dict[str, list[float]] = {"dev suite": [], "synthetic": []}
    n_dev = sum(1 for d in raw if not d["task"]["id"].startswith("syn-"))
    for _ in range(args.repeat):
        for index, item in enumerate(items):
            t0, c0 = time.perf_counter_ns(), time.thread_time_ns()
            chain.route(item.task, item.trajectories)
            c1, t1 = time.thread_time_ns(), time.perf_counter_ns()
            samples_us.append((t1 - t0) / 1000)
            cpu_us.append((c1 - c0) / 1000)
            by_kind["dev suite" if index < n_dev else "synthetic"].append((t1 - t0) / 1000)
    samples_us.sort()
    cpu_us.sort()
    p99 = samples_us[int(len(samples_us) * 0.99) - 1]

    tracemalloc.start()
    for item in items:
        chain.route(item.task, item.trajectories)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()

    print(f"tasks: {len(items)} ({n_dev} dev suite + {len(items) - n_dev} synthetic), "
          f"routes timed: {len(samples_us)}")
    print(f"median: {statistics.median(samples_us):.1f} us/route   p99: {p99:.1f} us/route   "
          f"mean: {statistics.fmean(samples_us):.1f} us/route")
    for kind, values in by_kind.items():
        if values:
            print(f"  {kind}: median {statistics.median(values):.1f} us over {len(values)} routes")
    print(f"CPU time (this thread only, robust to a busy machine): median {statistics.median(cpu_us):.1f} us, "
          f"p99 {cpu_us[int(len(cpu_us) * 0.99) - 1]:.1f} us")
    print(f"peak traced memory while routing all tasks once: {peak / 1024:.0f} KiB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
