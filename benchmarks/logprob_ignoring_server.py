"""Both judges against a server that ignores ``logprobs``, beside one that honours it (issue 13).

    python benchmarks/logprob_ignoring_server.py [--evaluations 3] [--criteria 3]

A scripted OpenAI-compatible server (tests/plugins/scripted_server.py, real HTTP on 127.0.0.1)
answers every chat request; the "ignoring" one never sends logprobs, whatever was asked, the
"honouring" one sends them when asked. Each judge evaluates ``--evaluations`` tasks one after the
other in one process, sharing one provider pool as an Oracle does, with the default retry settings (the retry backoff is
part of what is
measured). Reported per judge and server: HTTP requests the server saw, the sum of the results'
``calls``, retries (provenance, where reported), wall time, statuses and probability sources.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import sys
import time
from pathlib import Path
from contextlib import asynccontextmanager
from typing import Any, AsyncIterator

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from oracle.config.model import OracleConfig
from oracle._evaluators import evaluator_factory
from oracle.strategies.protocol import EvaluationContext
from oracle.tasks.task import Task, Trajectory
from tests.plugins.scripted_server import RecordedRequest, Reply, ScriptedServer, chat_reply


@asynccontextmanager
async def _pool() -> AsyncIterator[Any]:
    """A provider pool shared by the evaluations (None where this checkout has no pool yet)."""
    try:
        from oracle.providers.pool import ProviderPool
    except ImportError:
        yield None
        return
    async with ProviderPool() as pool:
        yield pool


def _handler(with_logprobs: bool):
    def handle(request: RecordedRequest) -> Reply:
        body = request.json or {}
        user = next((m["content"] for m in body.get("messages", []) if m.get("role") == "user"), "")
        wants = with_logprobs and bool(body.get("logprobs"))
        if "Answer with" in user:                                   # a decision-judge label question
            top = {"Yes": math.log(0.7), "No": math.log(0.3)}
            return chat_reply("Yes", logprobs=[("Yes", top["Yes"], top)] if wants else None, completion_tokens=1)
        text = json.dumps({"criteria": {"overall": {"rationale": "fine", "score": 7}}})
        return chat_reply(text, logprobs=[("7", -0.1, {"7": -0.1, "8": -2.5})] if wants else None)
    return handle


async def _run(judge_name: str, server: ScriptedServer, evaluations: int, criteria: int) -> dict[str, Any]:
    config = OracleConfig(providers={"judge": {"base_url": server.base_url, "model": "scripted-model"}})
    factory: Any = evaluator_factory(judge_name)
    try:
        judge = factory()                       # strategies that read their settings per evaluation
    except TypeError:
        judge = factory(config)                 # older: settings given at construction
    if judge_name == "decision_judge":
        task = Task(id="t", prompt="Customer: I was charged twice.",
                    criteria=[f"criterion {i}: asks for the order number" for i in range(criteria)])
    else:
        task = Task(id="t", prompt="Customer: I was charged twice.")
    cand = Trajectory(id="c1", answer="Could you send me your order number?")
    server.clear()
    start = time.perf_counter()
    async with _pool() as pool:                 # one client per endpoint for every evaluation, as an Oracle
        extra = {} if pool is None else {"providers": pool}
        results = [await judge.evaluate(EvaluationContext(task=task, trajectories=(cand,), config=config,
                                                          **extra))
                   for _ in range(evaluations)]
    took = time.perf_counter() - start
    retries = [getattr(r.provenance, "retries", None) for r in results]
    return {"requests_seen": len(server.requests), "calls_reported": sum(r.calls or 0 for r in results),
            "retries": None if any(x is None for x in retries) else sum(retries),
            "wall_s": round(took, 3), "statuses": sorted({r.status.value for r in results}),
            "sources": sorted({s for r in results for s in r.provenance.probability_sources}),
            "backends": sorted({str(r.provenance.decision_backend) for r in results})
            if judge_name == "decision_judge" else None}


async def main_async(args: argparse.Namespace) -> None:
    for judge_name in ("llm_judge", "decision_judge"):
        for label, with_logprobs in (("honours logprobs", True), ("ignores logprobs", False)):
            with ScriptedServer() as server:
                server.set_handler(_handler(with_logprobs))
                row = await _run(judge_name, server, args.evaluations, args.criteria)
            print(f"{judge_name:15s} {label:17s} " + "  ".join(f"{k}={v}" for k, v in row.items()), flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--evaluations", type=int, default=3)
    ap.add_argument("--criteria", type=int, default=3)
    asyncio.run(main_async(ap.parse_args()))


if __name__ == "__main__":
    main()
