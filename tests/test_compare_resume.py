"""``oracle compare`` survives ``kill -9``: rerun, same summary, no duplicate runs.

The run is a real CLI process on real HumanEval items from the dev suite (the verifier runs the
candidates in the sandbox); it is killed with SIGKILL once some records are on disk, a partial
last line is appended as a write cut short would leave it, and the same command is run again.
Its summary must equal an uninterrupted run's, apart from timings.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from oracle.comparison._importers import import_suite
from oracle.comparison._labels import dump_item

pytestmark = [pytest.mark.sandbox, pytest.mark.slow]
ROOT = Path(__file__).resolve().parent.parent
TIMING_KEYS = {"latency_ms", "call_latency_ms", "timings"}


def without_timings(value):
    if isinstance(value, dict):
        return {k: without_timings(v) for k, v in value.items() if k not in TIMING_KEYS}
    if isinstance(value, list):
        return [without_timings(v) for v in value]
    return value


def _labelled(shared_data, tmp_path: Path) -> Path:
    suite = shared_data("suite/dev_suite.jsonl")
    items, dropped = import_suite(suite, suite.parent.parent)
    assert dropped == 0
    code = [i for i in items if i.id.startswith("code-verify/humaneval-codegen16b/")][:5]
    yes_no = [i for i in items if i.id.startswith("decision/halueval-general/")][:3]
    path = tmp_path / "labelled.jsonl"
    path.write_text("".join(json.dumps(dump_item(i)) + "\n" for i in code + yes_no))
    return path


def _command(labelled: Path, out: Path) -> list[str]:
    return [sys.executable, "-m", "oracle", "compare", str(labelled), "-o", str(out), "--arms",
            "verifier,baseline", "--repeats", "2", "--both-orders", "--concurrency", "1", "--no-report"]


def test_kill_9_then_rerun_gives_the_same_summary_and_no_duplicates(shared_data, tmp_path):
    labelled = _labelled(shared_data, tmp_path)
    clean = subprocess.run(_command(labelled, tmp_path / "clean"), cwd=ROOT, capture_output=True, text=True,
                           timeout=600)
    assert clean.returncode == 0, clean.stderr
    out = tmp_path / "killed"
    proc = subprocess.Popen(_command(labelled, out), cwd=ROOT, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, start_new_session=True)
    runs = out / "runs.jsonl"
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline and proc.poll() is None:
        if runs.exists() and runs.read_bytes().count(b"\n") >= 3:
            break
        time.sleep(0.05)
    assert proc.poll() is None, "the run finished before it could be killed"
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    written = runs.read_bytes().count(b"\n")
    assert 3 <= written < 64 and not (out / "summary.json").exists()
    with runs.open("ab") as fh:  # a record cut short by the kill
        fh.write(b'{"key":"verifier|cut')
    again = subprocess.run(_command(labelled, out), cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert again.returncode == 0, again.stderr
    assert f"{64 - written} run now, {written} resumed" in again.stdout, again.stdout[-400:]
    keys = [json.loads(line)["key"] for line in runs.read_text().splitlines()]
    assert len(keys) == len(set(keys)) == 64  # 8 items x 2 arms x 2 repeats x 2 orders, each once
    summary = json.loads((out / "summary.json").read_text())
    reference = json.loads((tmp_path / "clean" / "summary.json").read_text())
    assert without_timings(summary) == without_timings(reference)
    verifier = next(a for a in summary["results"] if a["arm"] == "verifier")
    assert verifier["n"] == 5 and verifier["not_applicable"] == 3 and verifier["agreement"] == 1.0
