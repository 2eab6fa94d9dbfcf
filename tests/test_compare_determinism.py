"""Two ``oracle compare`` runs, same seed and data, deterministic servers: the same summary.json
apart from timings, and the same verdict in every run record.

The decision judge talks to jevcompat's reference System One server (``jevcompat mock``, a real
subprocess on a loopback port); the LLM judge to the scripted chat server (real HTTP); the
verifier runs the HumanEval candidates in the sandbox. Items: real dev-suite items (code with
tests, HaluEval yes/no, TruthfulQA and HaluEval QA multiple choice), repeats 2, both orders.
"""

from __future__ import annotations

import contextlib
import json
import socket
import subprocess
import sys
import time
from typing import Iterator

import httpx
import pytest

from oracle.comparison.api import compare
from oracle.comparison._importers import import_suite
from oracle.config.model import OracleConfig

pytestmark = [pytest.mark.sandbox, pytest.mark.slow]
JEVCOMPAT = [sys.executable, "-c", "import sys; from jevcompat.cli import main; sys.exit(main(sys.argv[1:]))"]
TIMING_KEYS = {"latency_ms", "call_latency_ms", "timings"}
VOLATILE_RECORD_KEYS = TIMING_KEYS | {"run_id", "cached_calls", "spent_usd"}
"""Which of two identical requests in a run the response cache answered depends on timing."""


def without(value, keys):
    if isinstance(value, dict):
        return {k: without(v, keys) for k, v in value.items() if k not in keys}
    if isinstance(value, list):
        return [without(v, keys) for v in value]
    return value


@contextlib.contextmanager
def reference_server() -> Iterator[str]:
    for _ in range(3):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        proc = subprocess.Popen([*JEVCOMPAT, "mock", "--host", "127.0.0.1", "--port", str(port)],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            for _ in range(600):
                if proc.poll() is not None:
                    break
                try:
                    httpx.get(f"http://127.0.0.1:{port}/v1/models", timeout=2)
                    yield f"http://127.0.0.1:{port}/v1"
                    return
                except httpx.TransportError:
                    time.sleep(0.05)
        finally:
            if proc.poll() is None:
                proc.terminate()
                proc.wait(timeout=10)
    pytest.fail("jevcompat mock did not start")


def test_same_seed_same_summary_apart_from_timings(shared_data, scripted_server, tmp_path):
    suite = shared_data("suite/dev_suite.jsonl")
    items, _ = import_suite(suite, suite.parent.parent)
    picked = [i for prefix, n in (("code-verify/humaneval-codegen16b/", 2), ("decision/halueval-general/", 3),
                                  ("decision/truthfulqa-mc/", 2), ("decision/halueval-qa/", 2))
              for i in [x for x in items if x.id.startswith(prefix)][:n]]
    with reference_server() as url:
        config = OracleConfig.model_validate({"providers": {
            "judge": scripted_server.provider_settings().model_dump(),
            "decision": {"kind": "systemone", "base_url": url, "model": "jev-latest", "max_retries": 1}}})
        results = [compare(picked, tmp_path / name, repeats=2, both_orders=True, seed=7, config=config,
                           arms=["verifier", "decision_judge", "llm_judge", "routed", "baseline"], report=False)
                   for name in ("one", "two")]
    one, two = (json.loads(r.summary_path.read_text()) for r in results)
    assert without(one, TIMING_KEYS) == without(two, TIMING_KEYS)
    recs = [{r.key: without(r.model_dump(mode="json"), VOLATILE_RECORD_KEYS) for r in res.records} for res in results]
    assert recs[0] == recs[1] and len(recs[0]) == 9 * 5 * 2 * 2
    arms = {a["arm"]: a for a in one["results"]}
    decision = arms["decision_judge"]
    assert decision["n"] == 9 and decision["not_applicable"] == 0  # code items: a comparison question ranks them
    assert decision["failed"] == 0 and decision["agreement"] is not None and decision["agreement_ci95"] is not None
    assert arms["verifier"]["agreement"] == 1.0 and arms["verifier"]["n"] == 2
    assert arms["routed"]["routing_accuracy"] is not None
