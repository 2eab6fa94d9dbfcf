"""DeepEval adapter: real ``deepeval.evaluate`` runs and ``metric.measure`` in a subprocess with
the network unreachable (its own network namespace, loopback only) and DeepEval's telemetry off;
verifier cases through the real sandbox, a judge case against a scripted server started inside
that namespace, and a refused endpoint (a metric error, never a 0)."""

from __future__ import annotations

import json
import subprocess
import textwrap
from pathlib import Path

import pytest

from tests.integrations_support import require

require("deepeval")  # CI=true: a missing framework fails, never skips

from tests.integrations_support import offline_command, offline_env  # noqa: E402

pytestmark = [pytest.mark.sandbox, pytest.mark.slow]
ROOT = Path(__file__).resolve().parent.parent

SCRIPT = """
import json, socket
from deepeval import evaluate
from deepeval.evaluate.configs import AsyncConfig, DisplayConfig, ErrorConfig
from deepeval.test_case import LLMTestCase
from oracle.integrations.deepeval import OracleMetric, OracleUnscored
from tests.integrations_support import (ADD_SPEC, BAD_ADD, GOOD_ADD, JUDGE_SPEC, judge_config,
                                        pointwise_json, refused_port)
from tests.plugins.scripted_server import ScriptedServer, chat_reply

try:
    socket.create_connection(("pypi.org", 443), timeout=3).close()
    offline = False
except OSError:
    offline = True

def run(cases, metric):
    result = evaluate(cases, metrics=[metric], async_config=AsyncConfig(run_async=False),
                      display_config=DisplayConfig(show_indicator=False, print_results=False),
                      error_config=ErrorConfig(ignore_errors=True))
    out = {}
    for t in result.test_results:
        [m] = t.metrics_data
        out[t.name] = {"score": m.score, "success": m.success, "reason": m.reason, "error": m.error,
                       "test_success": t.success}
    return out

prompt = "Write a Python function add(a, b) returning the sum."
verifier = run([LLMTestCase(name="add_good", input=prompt, actual_output=GOOD_ADD, metadata={"oracle": ADD_SPEC}),
                LLMTestCase(name="add_bad", input=prompt, actual_output=BAD_ADD, metadata={"oracle": ADD_SPEC}),
                LLMTestCase(name="capital", input="Capital of France?", actual_output="Paris",
                            expected_output="Paris")],
               OracleMetric())
with ScriptedServer() as server:
    server.push(chat_reply(pointwise_json({"c1": 10, "c2": 4})))
    judged = run([LLMTestCase(name="judged", input="Why is the sky blue?", actual_output="Rayleigh scattering.")],
                 OracleMetric(judge_config(server.base_url), task_defaults=JUDGE_SPEC))
failed = run([LLMTestCase(name="refused", input="Why is the sky blue?", actual_output="Rayleigh scattering.",
                          metadata={"oracle": JUDGE_SPEC})],
             OracleMetric(judge_config(f"http://127.0.0.1:{refused_port()}/v1")))
metric = OracleMetric(judge_config(f"http://127.0.0.1:{refused_port()}/v1"))
try:
    metric.measure(LLMTestCase(input="Why?", actual_output="x", metadata={"oracle": JUDGE_SPEC}))
    measured = "no error"
except OracleUnscored as exc:
    measured = {"message": str(exc), "score": metric.score, "success": metric.is_successful()}
print(json.dumps({"offline": offline, "verifier": verifier, "judged": judged, "failed": failed,
                  "measured": measured}))
"""


def test_deepeval_evaluate_offline(tmp_path):
    proc = subprocess.run(offline_command(textwrap.dedent(SCRIPT)), cwd=tmp_path,
                          env=offline_env(str(tmp_path), str(ROOT)), capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-4000:]
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out["offline"] is True
    v = out["verifier"]
    assert v["add_good"]["score"] == 1.0 and v["add_good"]["success"] is True and v["add_good"]["error"] is None
    assert v["add_bad"]["score"] == 0.0 and v["add_bad"]["success"] is False
    assert v["add_bad"]["reason"].startswith("verifier ok: passed 0/2 tests; one_two fail")
    assert v["capital"]["score"] == 1.0 and v["capital"]["reason"].startswith("verifier ok")
    j = out["judged"]["judged"]
    assert j["score"] == pytest.approx((1 + 3 / 9) / 2) and j["reason"].startswith("llm_judge ok")
    assert j["success"] is True  # no pass rule in the judge: score >= threshold 0.5
    f = out["failed"]["refused"]
    assert f["score"] is None and f["success"] is False and f["test_success"] is False
    assert "failed: llm_judge failed: EndpointUnreachable" in f["error"]  # a refused loopback port: no retries
    m = out["measured"]
    assert m["message"].startswith("failed: llm_judge failed") and m["score"] is None and m["success"] is False
