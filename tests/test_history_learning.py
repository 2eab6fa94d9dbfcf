"""Routing history that learns: outcomes logged in the store by task content hash, read back as prior
hardness through a snapshot frozen when an Oracle (or a batch) starts, named in every trace.
Real SQLite files, real processes."""

from __future__ import annotations

import json
import multiprocessing
import time
from pathlib import Path

import pytest

from oracle.batch import run_batch
from oracle.config.model import OracleConfig
from oracle.errors import ConfigError
from oracle.escalation.store import EscalationStore
from oracle.routing._history import HistoryLearning, HistorySnapshot, is_hard
from oracle._oracle import Oracle
from oracle.tasks.task import TaskInput

GOOD = {"task": {"id": "capital", "prompt": "Capital of France?", "reference": "Paris"},
        "trajectories": [{"id": "a", "answer": "Paris"}]}
UNROUTABLE = {"task": {"id": "nothing-to-check", "prompt": "Is this fine?", "evaluator": "verifier"},
              "trajectories": [{"id": "a", "answer": "yes"}]}
"""Forced to the verifier with nothing to check: no feasible evaluator, a failed (hard) outcome."""


def item(data) -> TaskInput:
    return TaskInput.model_validate(data)


def test_outcomes_are_keyed_by_content_hash_and_snapshots_are_frozen(tmp_path):
    with EscalationStore(tmp_path / "store.db") as store:
        good, hard = item(GOOD).task, item(UNROUTABLE).task
        for h in (True, False, True, True):
            store.record_outcome(task_hash=hard.content_hash(), task_id=hard.id, evaluator=None,
                                 status="failed" if h else "ok", escalation=None, hard=h)
        store.record_outcome(task_hash=good.content_hash(), task_id=good.id, evaluator="verifier", status="ok",
                             escalation=None, hard=False)
        learning = HistoryLearning(store)
        snap = learning.snapshot
        assert snap.hardness == {hard.content_hash(): 0.75, good.content_hash(): 0.0}
        assert (snap.ref.through_seq, snap.ref.tasks, snap.ref.evaluations) == (5, 2, 5)
        assert learning.prior(hard, None) == {hard.id: 0.75}
        # Same id, different content: a different task as far as history goes.
        edited = item({**UNROUTABLE, "task": {**UNROUTABLE["task"], "prompt": "Is this fine now?"}}).task
        assert learning.prior(edited, None) is None
        # An explicit entry for the id wins over the log.
        assert learning.prior(hard, {hard.id: 0.1}) == {hard.id: 0.1}

        store.record_outcome(task_hash=good.content_hash(), task_id=good.id, evaluator="verifier", status="failed",
                             escalation=None, hard=True)
        assert learning.snapshot == snap  # frozen: later outcomes do not reach it
        again = HistoryLearning(store, through_seq=snap.ref.through_seq).snapshot
        assert again.ref == snap.ref and again.hardness == snap.hardness  # rebuilt exactly from its seq
        newer = HistoryLearning(store).snapshot
        assert newer.ref.hash != snap.ref.hash and newer.hardness[good.content_hash()] == 0.5


def test_the_snapshot_hash_depends_on_content_only():
    a = HistorySnapshot.of({"h1": (2, 1), "h2": (1, 0)}, through_seq=3)
    b = HistorySnapshot.of({"h2": (1, 0), "h1": (2, 1)}, through_seq=9)
    c = HistorySnapshot.of({"h1": (2, 2), "h2": (1, 0)}, through_seq=3)
    assert a.ref.hash == b.ref.hash != c.ref.hash


def _record_many(path: str, worker: int, n: int) -> None:
    with EscalationStore(path) as store:
        for i in range(n):
            store.record_outcome(task_hash=f"task-{i % 5}", task_id=f"w{worker}", evaluator="verifier",
                                 status="ok" if i % 2 else "failed", escalation=None, hard=not i % 2)


@pytest.mark.slow
def test_concurrent_writers_lose_nothing(tmp_path):
    path = str(tmp_path / "shared.db")
    EscalationStore(path).close()
    ctx = multiprocessing.get_context("spawn")
    procs = [ctx.Process(target=_record_many, args=(path, w, 30)) for w in range(4)]
    for p in procs:
        p.start()
    snapshots = []
    with EscalationStore(path) as store:
        while any(p.is_alive() for p in procs):
            snapshots.append(HistoryLearning(store).snapshot)  # reads while the writers write
            time.sleep(0.02)
        for p in procs:
            p.join(30)
            assert p.exitcode == 0
        final = HistoryLearning(store).snapshot
        assert final.ref.evaluations == final.ref.through_seq == 120
        assert final.hardness == {f"task-{k}": pytest.approx(h) for k, h in
                                  {k: sum(1 for i in range(30) if i % 5 == k and not i % 2) /
                                   sum(1 for i in range(30) if i % 5 == k) for k in range(5)}.items()}
        for snap in snapshots:  # each a consistent prefix of the log
            assert snap.ref.evaluations == snap.ref.through_seq
            rebuilt = HistoryLearning(store, through_seq=snap.ref.through_seq).snapshot
            assert rebuilt.ref.hash == snap.ref.hash


def test_an_oracle_learns_from_its_store_and_names_the_snapshot(tmp_path):
    config = OracleConfig()
    with pytest.raises(ConfigError, match="learn_history"):
        Oracle(config, learn_history=True)
    with EscalationStore(tmp_path / "store.db") as store:
        first = Oracle(config, store=store, learn_history=True)
        res = first.evaluate(UNROUTABLE)
        assert res.status.value == "pending"  # the no-feasible-evaluator request waits in the store
        assert res.route.history_snapshot is not None and res.route.history_snapshot.evaluations == 0
        assert res.route.signals["prior_hardness"] is None
        again = first.evaluate(UNROUTABLE)  # the same Oracle keeps its snapshot
        assert again.route.signals["prior_hardness"] is None
        assert again.route.history_snapshot == res.route.history_snapshot

        second = Oracle(config, store=store, learn_history=True)
        later = second.evaluate(UNROUTABLE)
        assert later.route.signals["prior_hardness"] == 1.0
        assert later.route.history_snapshot.evaluations == 2
        assert json.loads(later.to_json())["route"]["history_snapshot"]["hash"] == later.route.history_snapshot.hash
        assert second.evaluate(GOOD).route.signals["prior_hardness"] is None  # never seen

        plain = Oracle(config, store=store)  # opt-in: no snapshot, nothing logged
        before = store.last_outcome_seq()
        routed = plain.evaluate(UNROUTABLE)
        assert routed.route.history_snapshot is None and "history_snapshot" not in routed.to_json()
        assert routed.route.signals["prior_hardness"] is None
        assert store.last_outcome_seq() == before


def _write(path: Path, rows) -> None:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))


def test_a_batch_routes_with_the_snapshot_frozen_at_its_start(tmp_path):
    store_path = str(tmp_path / "store.db")
    tasks = [GOOD, UNROUTABLE, UNROUTABLE,
             {"task": {"id": "capital-2", "prompt": "Capital of Peru?", "reference": "Lima"},
              "trajectories": [{"id": "a", "answer": "Quito"}]}]
    src = tmp_path / "tasks.jsonl"
    _write(src, tasks)
    config = OracleConfig()
    run_batch(src, tmp_path / "one.jsonl", config=config, store_path=store_path, progress_tty=False)
    one = [json.loads(line) for line in (tmp_path / "one.jsonl").read_text().splitlines()]
    # Within the first batch nothing is known yet, even for the repeated task.
    assert {r["result"]["route"]["history_snapshot"]["evaluations"] for r in one} == {0}
    assert all(r["result"]["route"]["signals"]["prior_hardness"] is None for r in one)

    run_batch(src, tmp_path / "two.jsonl", config=config, store_path=store_path, progress_tty=False)
    two = [json.loads(line) for line in (tmp_path / "two.jsonl").read_text().splitlines()]
    snaps = {json.dumps(r["result"]["route"]["history_snapshot"], sort_keys=True) for r in two}
    assert len(snaps) == 1 and json.loads(snaps.pop())["evaluations"] == 4
    by_task: dict[str, list[bool]] = {}
    for r in one:
        by_task.setdefault(r["task_id"], []).append(is_hard(r["status"], bool(r["escalation"])))
    for r in two:
        expected = sum(by_task[r["task_id"]]) / len(by_task[r["task_id"]])
        assert r["result"]["route"]["signals"]["prior_hardness"] == pytest.approx(expected)
    assert by_task["nothing-to-check"] == [True, True]

    run_batch(src, tmp_path / "three.jsonl", config=config, store_path=store_path, progress_tty=False,
              learn_history=False)
    three = [json.loads(line) for line in (tmp_path / "three.jsonl").read_text().splitlines()]
    assert all("history_snapshot" not in r["result"]["route"] for r in three)
    with EscalationStore(store_path) as store:
        assert store.last_outcome_seq() == 8  # the third batch logged nothing


def test_ray_workers_rebuild_the_drivers_snapshot(tmp_path):
    """The Ray worker function (called here in-process) routes with the snapshot the driver froze,
    not with whatever the store holds when the worker starts."""
    from oracle.batch.ray_engine import _evaluate_chunk
    from oracle.batch.source import entry_to_wire, iter_entries

    store_path = str(tmp_path / "store.db")
    src = tmp_path / "tasks.jsonl"
    _write(src, [UNROUTABLE, GOOD])
    with EscalationStore(store_path) as store:
        task = item(UNROUTABLE).task
        store.record_outcome(task_hash=task.content_hash(), task_id=task.id, evaluator=None, status="failed",
                             escalation=None, hard=True)
        frozen = HistoryLearning(store).snapshot.ref
        store.record_outcome(task_hash=task.content_hash(), task_id=task.id, evaluator=None, status="ok",
                             escalation=None, hard=False)  # after the driver froze its snapshot
    chunk = [entry_to_wire(e) for e in iter_entries(src, OracleConfig().limits)]
    rows = _evaluate_chunk(OracleConfig().model_dump_json(), store_path, chunk, 2, 30.0, frozen.through_seq)
    routes = {r["task_id"]: r["result"]["route"] for r in rows}
    assert {json.dumps(r["history_snapshot"], sort_keys=True) for r in routes.values()} == \
        {json.dumps(frozen.model_dump(), sort_keys=True)}
    assert routes["nothing-to-check"]["signals"]["prior_hardness"] == 1.0  # not 0.5: the later outcome is unseen
    unlearning = _evaluate_chunk(OracleConfig().model_dump_json(), store_path, chunk, 2, 30.0, None)
    assert all("history_snapshot" not in r["result"]["route"] for r in unlearning)


def test_the_http_service_learns_when_it_has_a_store(tmp_path):
    """``oracle serve`` builds its Oracle like ``oracle batch``: learning from the store it files to."""
    pytest.importorskip("fastapi")
    from oracle.serve.service import Service
    from oracle.serve.settings import ServeSettings

    store_path = str(tmp_path / "store.db")
    with EscalationStore(store_path) as store:
        task = item(UNROUTABLE).task
        store.record_outcome(task_hash=task.content_hash(), task_id=task.id, evaluator=None, status="failed",
                             escalation=None, hard=True)
    import asyncio

    service = Service(OracleConfig(), ServeSettings(store_path=store_path, work_dir=str(tmp_path)))
    quiet = Service(OracleConfig(escalation={"enabled": False}), ServeSettings(work_dir=str(tmp_path)))
    try:
        route = service.oracle.route(UNROUTABLE)
        assert route.signals["prior_hardness"] == 1.0 and route.history_snapshot.evaluations == 1
        assert quiet.oracle.learning is None
    finally:
        for svc in (service, quiet):
            asyncio.run(svc.aclose())
