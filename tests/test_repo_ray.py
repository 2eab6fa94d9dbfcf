"""Repository tasks on the Ray engine: a real two-node cluster (tests/ray_cluster.py) judges two
repository tasks, each node snapshotting the bundle itself, and the verdicts are the local engine's."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from oracle.batch import run_batch
from tests.integrations_support import require
from tests.ray_cluster import local_ray_cluster
from tests.repo_attacks import task_line

pytestmark = [pytest.mark.ray, pytest.mark.slow, pytest.mark.sandbox]

require("ray")


def _verdicts(path: Path) -> dict[str, dict[str, bool]]:
    out = {}
    for row in map(json.loads, path.read_text().splitlines()):
        out[row["task_id"]] = {c["id"]: c["passed"] for c in row["result"]["result"]["candidates"]}
    return out


def test_repository_tasks_on_a_two_node_ray_cluster_match_the_local_engine(tmp_path):
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text(task_line(tmp_path, "textkit-a", ["right_fix", "conftest_rewrite", "early_exit"]) + "\n"
                     + task_line(tmp_path, "textkit-b", ["future_history", "fix_and_own_test"]) + "\n")
    local = tmp_path / "local.jsonl"
    run_batch(tasks, local, concurrency=2, progress_tty=False, store_path=None)
    with local_ray_cluster(tmp_path / "ray-cluster", head_cpus=1, worker_cpus=1) as cluster:
        on_ray = tmp_path / "ray.jsonl"
        try:
            run_batch(tasks, on_ray, concurrency=2, engine="ray", ray_address=cluster.address, progress_tty=False,
                      store_path=None)
        except Exception:
            print(cluster.log_tail())
            raise
    expected = {"textkit-a": {"right_fix": True, "conftest_rewrite": False, "early_exit": False},
                "textkit-b": {"future_history": False, "fix_and_own_test": True}}
    assert _verdicts(local) == expected
    assert _verdicts(on_ray) == expected
