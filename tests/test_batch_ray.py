"""The Ray engine on a real two-node cluster (a head and one worker, started by these tests on the
loopback interface) writes the same rows as the local engine, and both nodes compute some.

Slow (the cluster takes several seconds to start and about 1 GB while it runs) but not opt-in: CI
installs the ``[ray]`` extra and runs these with the rest of the suite. One cluster serves the
module; it is stopped at the end however the tests end."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from oracle.batch import run_batch
from oracle.escalation.store import EscalationStore
from tests.batch_support import batch_config, faulty_handler, verdicts, write_mixed_tasks
from tests.data.tasks import question_task
from tests.integrations_support import require
from tests.ray_cluster import RayCluster, local_ray_cluster

pytestmark = [pytest.mark.ray, pytest.mark.slow]

require("ray")  # skipped without the [ray] extra, except in CI (CI=true), where it must run
import ray  # noqa: E402


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    with local_ray_cluster(tmp_path_factory.mktemp("ray-cluster"), head_cpus=1, worker_cpus=1) as running:
        yield running


def rows_by_line(path: Path) -> dict[int, list[dict]]:
    out: dict[int, list[dict]] = {}
    for raw in path.read_text().splitlines():
        row = json.loads(raw)
        out.setdefault(row["line"], []).append(row)
    return out


def route(row: dict) -> dict:
    """The route trace, vote for vote, history snapshot included (its timing aside)."""
    return {k: v for k, v in row["result"]["route"].items() if k != "elapsed_us"}


def on_ray(cluster: RayCluster, src: Path, out: Path, **kwargs):
    try:
        report = run_batch(src, out, concurrency=8, engine="ray", ray_address=cluster.address,
                           progress_tty=False, **kwargs)
    except Exception:
        print(cluster.log_tail())
        raise
    # The engine connected itself, so it disconnected at the end (a later run may name another cluster).
    assert not ray.is_initialized()
    return report


def assert_same_rows(ray_out: Path, local_out: Path, n: int) -> None:
    ray_rows = rows_by_line(ray_out)
    assert sorted(ray_rows) == list(range(1, n + 1)), "every input line has a row"
    assert all(len(rows) == 1 for rows in ray_rows.values()), "and only one"
    assert verdicts(ray_out) == verdicts(local_out)
    local_rows = rows_by_line(local_out)
    for line, (row,) in ray_rows.items():
        (twin,) = local_rows[line]
        assert (row["key"], row["valid"], row["calls"], row["error"]) == \
            (twin["key"], twin["valid"], twin["calls"], twin["error"]), line
        if row["result"] is not None:
            assert route(row) == route(twin), line


def test_ray_engine_on_a_two_node_cluster_matches_the_local_engine(cluster, scripted_server, tmp_path):
    scripted_server.set_handler(faulty_handler(0.25))
    src = tmp_path / "tasks.jsonl"
    n = 60
    kinds = write_mixed_tasks(src, n, seed=21)
    config = batch_config(scripted_server)
    local = run_batch(src, tmp_path / "local.jsonl", config=config, concurrency=8, progress_tty=False)
    assert local.nodes == {}

    report = on_ray(cluster, src, tmp_path / "ray.jsonl", config=config)

    assert report.summary["rows"] == report.total == report.computed == n
    assert_same_rows(tmp_path / "ray.jsonl", tmp_path / "local.jsonl", n)
    # The mix is real: judged tasks, invalid lines, and faults the handler injected.
    assert kinds["question"] and kinds["open"] and (kinds["bad_json"] or kinds["bad_schema"])
    statuses = {row["status"] for (row,) in rows_by_line(tmp_path / "ray.jsonl").values()}
    assert "ok" in statuses and "failed" in statuses
    # Scale-out, not a local run in disguise: rows came back from both nodes, the worker's included
    # (two chunks in flight, one CPU per node).
    assert sum(report.nodes.values()) == n
    assert set(report.nodes) == {cluster.head_node, cluster.worker_node}, (report.nodes, cluster)
    assert report.nodes[cluster.worker_node] > 0


def test_ray_workers_share_the_store_and_learn_from_it_as_the_local_engine_does(cluster, scripted_server,
                                                                               tmp_path):
    """With an escalation store, the cluster's workers write escalations and outcomes into it, and a
    second batch routes with the history the first one logged, exactly as a local run does.

    No injected faults here: the history marks the first batch's failures hard, hard open tasks
    are judged pairwise in both orders at once, and when those two calls meet different faults the
    error reported depends on which reply lands first, on any engine. Unreadable replies still
    make history, and decisions below their ``min_confidence`` store requests."""
    scripted_server.set_handler(faulty_handler(0.0))
    src = tmp_path / "tasks.jsonl"
    write_mixed_tasks(src, 40, seed=5)
    with src.open("a") as f:  # decisions below their min_confidence: each stores a request for review
        for i in range(6):
            unsure = question_task(id=f"unsure-{i}", prompt=f"Refund ticket {i}: which team?")
            unsure["task"]["questions"][0]["min_confidence"] = 0.95
            f.write(json.dumps(unsure) + "\n")
    n = 46
    config = batch_config(scripted_server)
    for run in ("first", "second"):
        run_batch(src, tmp_path / f"local-{run}.jsonl", config=config, concurrency=8, progress_tty=False,
                  store_path=str(tmp_path / "local.sqlite"))
        report = on_ray(cluster, src, tmp_path / f"ray-{run}.jsonl", config=config,
                        store_path=str(tmp_path / "ray.sqlite"))
        assert sum(report.nodes.values()) == n
        assert_same_rows(tmp_path / f"ray-{run}.jsonl", tmp_path / f"local-{run}.jsonl", n)

    snapshots = {json.dumps(row["result"]["route"]["history_snapshot"], sort_keys=True)
                 for (row,) in rows_by_line(tmp_path / "ray-second.jsonl").values() if row["result"]}
    assert len(snapshots) == 1, "one snapshot for the whole batch, on every node"
    (snapshot,) = [json.loads(s) for s in snapshots]
    assert snapshot["through_seq"] > 0 and snapshot["evaluations"] > 0, "the second batch learned from the first"
    with EscalationStore(tmp_path / "local.sqlite") as local_store, \
            EscalationStore(tmp_path / "ray.sqlite") as ray_store:
        assert ray_store.last_outcome_seq() == local_store.last_outcome_seq() > 0
        stored = sorted(e.task_id for e in ray_store.list())
        assert stored == sorted(e.task_id for e in local_store.list()) == [f"unsure-{i}" for i in range(6)]
