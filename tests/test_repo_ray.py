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


def test_a_bundle_travels_with_its_task_when_the_workers_cannot_read_it(tmp_path, monkeypatch):
    """The bundles are removed right after the driver read the input (and the bundles), before any
    worker runs: the workers get each bundle's bytes through Ray's object store, land them in their
    repository cache, and judge as before. A ``path`` repository cannot travel: its row fails,
    naming task.repository.path and suggesting a bundle."""
    import hashlib
    import shutil

    from oracle import OracleConfig
    from oracle.batch import runner

    tasks = tmp_path / "tasks.jsonl"
    lines = [task_line(tmp_path, "textkit-a", ["right_fix", "conftest_rewrite"]),
             task_line(tmp_path, "textkit-b", ["fix_and_own_test", "early_exit"])]
    path_task = json.loads(task_line(tmp_path, "textkit-path", ["right_fix"]))
    path_task["task"]["repository"] = {"path": str(tmp_path / "repo-textkit-path"),
                                       "commit": path_task["task"]["repository"]["commit"]}
    tasks.write_text("\n".join([*lines, json.dumps(path_task)]) + "\n")
    bundles = [tmp_path / "textkit-a.bundle", tmp_path / "textkit-b.bundle"]
    shas = {hashlib.sha256(b.read_bytes()).hexdigest() for b in bundles}  # one: the builds are byte for byte alike
    real = runner.iter_entries

    def read_then_remove(*args, **kwargs):
        """The input as the driver reads it; once it has read every line (and shipped its bundles),
        the bundles and the repository are gone from this machine."""
        yield from real(*args, **kwargs)
        for bundle in bundles:
            bundle.unlink()
        shutil.rmtree(tmp_path / "repo-textkit-path")

    monkeypatch.setattr(runner, "iter_entries", read_then_remove)
    cache = tmp_path / "cache"
    config = OracleConfig(verifier={"repo_cache": str(cache)})
    with local_ray_cluster(tmp_path / "ray-cluster", head_cpus=1, worker_cpus=1) as cluster:
        on_ray = tmp_path / "ray.jsonl"
        try:
            run_batch(tasks, on_ray, config=config, concurrency=2, engine="ray", ray_address=cluster.address,
                      progress_tty=False, store_path=None)
        except Exception:
            print(cluster.log_tail())
            raise
    assert not any(b.exists() for b in bundles)
    rows = {row["task_id"]: row for row in map(json.loads, on_ray.read_text().splitlines())}
    verdicts = {tid: {c["id"]: c["passed"] for c in row["result"]["result"]["candidates"]}
                for tid, row in rows.items() if tid != "textkit-path"}
    assert verdicts == {"textkit-a": {"right_fix": True, "conftest_rewrite": False},
                        "textkit-b": {"fix_and_own_test": True, "early_exit": False}}, rows
    landed = {p.name for p in (cache / "bundles").iterdir()}
    assert landed == {f"{sha}.bundle" for sha in shas}
    failed = rows["textkit-path"]["result"]["result"]
    assert failed["status"] == "failed" and not failed["candidates"]
    message = failed["error"]["message"]
    assert message.startswith("task.repository.path") and "task.repository.bundle" in message, message
