"""Throughput of the async chat client against a local server with a fixed latency.

    python benchmarks/provider_throughput.py [--requests 1000] [--latency-ms 50] [--concurrency 1 16 64]

The server is the scripted wire-protocol server from tests/plugins, run as a separate process (so
it does not share the client's GIL), answering every OpenAI chat request after exactly L ms. For
each concurrency C the client sends N requests with at most C in flight (its own per-provider
limit) and we print achieved requests/s against the ideal C / L, and the client's overhead per
request: CPU seconds spent in this process per request, and mean observed latency above L.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from oracle.config.model import ProviderSettings  # noqa: E402
from oracle.providers import ChatMessage, ChatRequest, make_async_chat_client  # noqa: E402

REQ = ChatRequest(messages=[ChatMessage(role="user", content="Is this answer correct? yes or no")],
                  max_tokens=1, logprobs=True, top_logprobs=2)


def start_server(latency_ms: float) -> tuple[subprocess.Popen, str]:
    proc = subprocess.Popen([sys.executable, "-m", "tests.plugins.scripted_server", "--latency-ms",
                             str(latency_ms)], cwd=ROOT, stdout=subprocess.PIPE, text=True,
                            env={**os.environ, "PYTHONPATH": str(ROOT)})
    line = proc.stdout.readline().strip()
    if not line.startswith("READY "):
        proc.kill()
        raise RuntimeError(f"scripted server did not start: {line!r}")
    return proc, line.split(" ", 1)[1]


async def run(base_url: str, concurrency: int, n: int) -> dict[str, float]:
    settings = ProviderSettings(base_url=base_url, model="bench", concurrency=concurrency, timeout_s=30,
                                max_retries=0)
    client = make_async_chat_client(settings)
    await asyncio.gather(*(client.complete(REQ) for _ in range(concurrency)))  # warm the connections
    latencies: list[float] = []

    async def one() -> None:
        reply = await client.complete(REQ)
        latencies.append(reply.provenance.latency_ms)

    cpu0, t0 = time.process_time(), time.perf_counter()
    await asyncio.gather(*(one() for _ in range(n)))
    wall, cpu = time.perf_counter() - t0, time.process_time() - cpu0
    await client.aclose()
    return {"wall_s": wall, "cpu_s": cpu, "mean_latency_ms": sum(latencies) / len(latencies)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--requests", type=int, default=1000)
    parser.add_argument("--latency-ms", type=float, default=50.0)
    parser.add_argument("--concurrency", type=int, nargs="+", default=[1, 16, 64])
    args = parser.parse_args()
    proc, base_url = start_server(args.latency_ms)
    try:
        print(f"{args.requests} requests per row, server latency {args.latency_ms:g} ms, "
              f"load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores")
        print(f"{'C':>4} {'req/s':>9} {'ideal C/L':>10} {'% ideal':>8} {'client CPU/req':>15} "
              f"{'latency-L':>10}")
        for c in args.concurrency:
            r = asyncio.run(run(base_url, c, args.requests))
            achieved = args.requests / r["wall_s"]
            ideal = c / (args.latency_ms / 1000)
            print(f"{c:>4} {achieved:>9.1f} {ideal:>10.1f} {100 * achieved / ideal:>7.1f}% "
                  f"{1000 * r['cpu_s'] / args.requests:>12.3f} ms {r['mean_latency_ms'] - args.latency_ms:>7.2f} ms")
    finally:
        proc.terminate()
        proc.wait(10)


if __name__ == "__main__":
    main()
