"""Batch throughput and memory: N routed tasks against the scripted wire server at a fixed latency.

The server runs as its own process (``python -m tests.plugins.scripted_server``) so it does not share
the batch's GIL; every batch size runs in a fresh child process so its peak RSS is its own. Tasks
are decision-judge tasks (one typed question, one candidate: one model call each), routed by the
real router, evaluated by the real decision judge over HTTP, written by the real crash-safe writer.

    python benchmarks/batch_bench.py [--sizes 1000 5000] [--concurrency 64] [--latency-ms 20]

Ideal throughput = concurrency / latency (every slot always waiting on the server, zero overhead).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def write_tasks(path: Path, n: int) -> None:
    from tests.data.tasks import question_task

    with path.open("w") as fh:
        for i in range(n):
            task = question_task(id=f"bench-{i}", prompt=f"Ticket {i}: my card was charged twice.")
            fh.write(json.dumps(task) + "\n")


def child(n: int, concurrency: int, base_url: str, workdir: Path) -> dict:
    """Runs in a fresh process: one batch, report elapsed and peak RSS."""
    from oracle.batch import run_batch
    from oracle.config.model import OracleConfig

    src, out = workdir / f"tasks-{n}.jsonl", workdir / f"results-{n}.jsonl"
    write_tasks(src, n)
    config = OracleConfig.model_validate({"providers": {
        "judge": {"base_url": base_url, "max_retries": 0, "timeout_s": 30, "concurrency": concurrency},
        "decision": {"kind": "decisions", "base_url": base_url, "max_retries": 0, "timeout_s": 30,
                     "concurrency": concurrency}}})
    rss_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    started = time.perf_counter()
    report = run_batch(src, out, config=config, concurrency=concurrency, progress_tty=False,
                       progress_interval_s=3600)
    elapsed = time.perf_counter() - started
    dj = report.summary["evaluators"].get("decision_judge", {})
    return {"n": n, "rows": report.summary["rows"], "elapsed_s": elapsed,
            "ok": dj.get("count", 0) - dj.get("failures", 0),
            "failures": dj.get("failures"), "p50_ms": dj.get("latency_p50_ms"), "p95_ms": dj.get("latency_p95_ms"),
            "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
            "rss_at_start_mb": rss_before / 1024}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 5000])
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument("--latency-ms", type=float, default=20.0)
    parser.add_argument("--child", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--base-url", help=argparse.SUPPRESS)
    parser.add_argument("--workdir", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:  # the library logs through stdlib logging: unconfigured, nothing is formatted
        print(json.dumps(child(args.child, args.concurrency, args.base_url, Path(args.workdir))))
        return

    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    server = subprocess.Popen([sys.executable, "-m", "tests.plugins.scripted_server", "--port", "0",
                               "--latency-ms", str(args.latency_ms)], cwd=ROOT, env=env,
                              stdout=subprocess.PIPE, text=True)
    try:
        line = server.stdout.readline().strip()
        assert line.startswith("READY "), line
        base_url = line.split(" ", 1)[1]
        ideal = args.concurrency / (args.latency_ms / 1000)
        print(f"scripted server {base_url}, latency {args.latency_ms} ms, concurrency {args.concurrency}, "
              f"ideal {ideal:.0f} tasks/s (1 call per task)")
        print(f"{'tasks':>6} {'rows':>6} {'elapsed s':>9} {'tasks/s':>8} {'of ideal':>8} {'p50 ms':>7} "
              f"{'p95 ms':>7} {'failures':>8} {'peak RSS MB':>11}")
        with tempfile.TemporaryDirectory() as tmp:
            for n in args.sizes:
                out = subprocess.run([sys.executable, __file__, "--child", str(n), "--concurrency",
                                      str(args.concurrency), "--base-url", base_url, "--workdir", tmp],
                                     cwd=ROOT, env=env, capture_output=True, text=True, check=True)
                r = json.loads(out.stdout.strip().splitlines()[-1])
                rate = r["n"] / r["elapsed_s"]
                print(f"{r['n']:>6} {r['rows']:>6} {r['elapsed_s']:>9.2f} {rate:>8.1f} {rate / ideal:>8.1%} "
                      f"{r['p50_ms']:>7.1f} {r['p95_ms']:>7.1f} {r['failures']:>8} {r['peak_rss_mb']:>11.1f}")
    finally:
        server.terminate()
        server.wait(10)


if __name__ == "__main__":
    main()
