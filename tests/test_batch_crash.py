"""kill -9 of the batch process at random points, three times, then resume: no row lost or
duplicated, and the verdicts equal those of an uninterrupted run."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from oracle.batch import run_batch
from tests.batch_support import batch_config, faulty_handler, verdicts, write_mixed_tasks

ROOT = Path(__file__).resolve().parent.parent


def _rows(path: Path) -> int:
    try:
        return path.read_bytes().count(b"\n")
    except FileNotFoundError:
        return 0


@pytest.mark.slow
def test_kill_nine_three_times_then_resume(scripted_server, tmp_path):
    scripted_server.latency_s = 0.01
    scripted_server.set_handler(faulty_handler(0.25))
    src = tmp_path / "tasks.jsonl"
    write_mixed_tasks(src, 200, seed=11)
    total = len(src.read_text().splitlines())
    config = batch_config(scripted_server)
    cfg_path = tmp_path / "oracle.json.yaml"
    cfg_path.write_text(config.model_dump_json())

    reference = tmp_path / "reference.jsonl"
    run_batch(src, reference, config=config, concurrency=8, store_path=str(tmp_path / "ref.sqlite"),
              progress_tty=False)
    expected = verdicts(reference)
    assert len(expected) == total

    out = tmp_path / "results.jsonl"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    cmd = [sys.executable, "-m", "oracle", "--config", str(cfg_path), "batch", str(src), "-o", str(out),
           "--concurrency", "8", "--store", str(tmp_path / "esc.sqlite")]
    rnd = random.Random(2024)
    targets = sorted(rnd.sample(range(15, total - 30), 3))
    kills = []
    for target in targets:
        proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        deadline = time.monotonic() + 120
        while _rows(out) < target and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.005)
        assert proc.poll() is None, f"batch finished before the kill point: {proc.stderr.read()[-500:]}"
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(10)
        proc.stderr.close()
        kills.append(_rows(out))
    assert kills == sorted(kills) and kills[-1] < total            # each kill landed mid-run

    final = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert final.returncode == 0, final.stderr
    lines = [json.loads(r) for r in out.read_text().splitlines()]
    assert len(lines) == total                                      # nothing lost, nothing duplicated
    assert sorted(r["line"] for r in lines) == list(range(1, total + 1))
    assert verdicts(out) == expected
