"""The Ray engine writes the same rows as the local engine (opt-in: ORACLE_TEST_RAY=1; starts a
local Ray cluster, which takes a while and several hundred MB)."""

from __future__ import annotations

import os

import pytest

from oracle.batch import run_batch
from tests.batch_support import batch_config, faulty_handler, verdicts, write_mixed_tasks

pytestmark = [pytest.mark.ray, pytest.mark.slow,
              pytest.mark.skipif(os.environ.get("ORACLE_TEST_RAY") != "1", reason="opt-in: ORACLE_TEST_RAY=1")]


def test_ray_engine_matches_local_engine(scripted_server, tmp_path):
    ray = pytest.importorskip("ray")
    scripted_server.set_handler(faulty_handler(0.25))
    src = tmp_path / "tasks.jsonl"
    write_mixed_tasks(src, 60, seed=21)
    config = batch_config(scripted_server)
    run_batch(src, tmp_path / "local.jsonl", config=config, concurrency=8, progress_tty=False)
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    ray.init(num_cpus=2, include_dashboard=False, runtime_env={"env_vars": {"PYTHONPATH": root}})
    try:
        report = run_batch(src, tmp_path / "ray.jsonl", config=config, concurrency=8, engine="ray",
                           progress_tty=False)
    finally:
        ray.shutdown()
    assert report.summary["rows"] == report.total == 60
    assert verdicts(tmp_path / "ray.jsonl") == verdicts(tmp_path / "local.jsonl")
