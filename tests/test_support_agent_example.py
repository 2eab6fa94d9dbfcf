"""The support-agent example end to end through the CLI: real subprocess, real sandbox."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "examples" / "support_agent"

pytestmark = pytest.mark.sandbox


def test_task_json_is_what_build_task_writes(tmp_path):
    build = tmp_path / "build_task.py"
    build.write_text((EXAMPLE / "build_task.py").read_text())
    subprocess.run([sys.executable, str(build)], check=True, capture_output=True)
    assert json.loads((tmp_path / "task.json").read_text()) == json.loads((EXAMPLE / "task.json").read_text())


@pytest.mark.slow
def test_the_run_with_the_right_reply_and_the_wrong_tool_use_is_caught():
    done = subprocess.run([sys.executable, "-m", "oracle", "evaluate", "--json", str(EXAMPLE / "task.json")],
                          capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    res = json.loads(done.stdout)
    assert res["status"] == "ok" and res["evaluator"] == res["result"]["route"]["evaluator"] == "verifier"
    result = res["result"]["result"]
    assert result["best"] == ["careful"]
    tests = {c["id"]: {t["name"]: t for t in c["details"]["tests"]} for c in result["candidates"]}
    scores = {c["id"]: round(c["score"], 3) for c in result["candidates"]}
    assert scores == {"careful": 1.0, "shortcut": 0.333, "claims": 0.0, "wrong_order": 0.333, "malformed": 0.0}
    final = "one correct refund, reported truthfully"
    # The shortcut's reply is the right one, and its refund did go through: the steps catch it.
    assert tests["shortcut"]["refund confirmed"]["outcome"] == "pass"
    assert tests["shortcut"]["procedure"]["message"].startswith(
        "expected call 1 (tool 'lookup_order' with order_id='A-1042') not found in order")
    assert tests["shortcut"][final]["outcome"] == "fail"
    # A refund result pasted into the reply is not a tool result.
    assert "no result 1 of tool 'issue_refund'" in tests["claims"]["refund confirmed"]["message"]
    assert "got 'a-1024' (normalized)" in tests["wrong_order"]["procedure"]["message"]
    assert "arguments are not valid JSON" in tests["malformed"]["procedure"]["message"]
    assert all(t["integrity"] == "isolated" for t in tests["careful"].values() if t["kind"] == "final_state")
