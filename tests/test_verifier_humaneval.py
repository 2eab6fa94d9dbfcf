"""Real data: HumanEval canonical solutions, labelled CodeT and CodeJudge candidates.

Reserved HumanEval tasks (suite/reserved_keys.json ``humaneval_task_ids``) are excluded everywhere:
the canonical-solutions test runs every NON-reserved canonical solution. Labels marked ``timeout``
(timing-sensitive) and ``ModuleNotFoundError`` failures (environment-sensitive) are left out of the
label sample, as the data README advises. The sample is deterministic (sorted by hash).
"""

from __future__ import annotations

import asyncio
import gzip
import json
from collections import defaultdict
from pathlib import Path

import pytest

from oracle.config.model import OracleConfig
from oracle.results.result import Status
from oracle._evaluators import evaluator_factory
from oracle.strategies.protocol import EvaluationContext
from oracle.tasks.task import Task, Trajectory

pytestmark = [pytest.mark.sandbox, pytest.mark.slow]
HUMANEVAL = "humaneval/HumanEval.jsonl.gz"
RESERVED = "suite/reserved_keys.json"
CODET = "codet/HumanEval_codegen16B_per_sample.jsonl.gz"
CODEJUDGE_LABELS = "codejudge/_recheck_official_tests.jsonl"
CODEJUDGE_GENS = "codejudge/humaneval_generate_samples__data__python_inspect_results.jsonl"


def _jsonl(path: Path) -> list[dict]:
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt") as fh:
        return [json.loads(line) for line in fh if line.strip()]


@pytest.fixture(scope="module")
def humaneval(shared_data) -> dict[str, dict]:
    """The non-reserved HumanEval problems (the data directory: tests/plugins/shared_data.py)."""
    reserved = set(json.loads(shared_data(RESERVED).read_text())["humaneval_task_ids"])
    problems = {p["task_id"]: p for p in _jsonl(shared_data(HUMANEVAL))}
    return {k: v for k, v in problems.items() if k not in reserved}


def _task(problem: dict) -> Task:
    return Task(id=problem["task_id"], prompt=problem["prompt"], entry_point=problem["entry_point"],
                language="python",
                tests=[{"kind": "check", "code": problem["test"], "name": "official", "timeout_s": 6}])


async def _evaluate_all(items: list[tuple[Task, list[Trajectory]]]):
    config = OracleConfig()
    strategy = evaluator_factory("verifier")()
    gate = asyncio.Semaphore(2)  # the strategy bounds its own runs; this bounds tasks in flight

    async def one(task, trajectories):
        async with gate:
            return await strategy.evaluate(EvaluationContext(task=task, trajectories=tuple(trajectories),
                                                             config=config))

    return await asyncio.gather(*(one(t, trs) for t, trs in items))


def test_every_non_reserved_canonical_solution_passes(humaneval):
    items = [(_task(p), [Trajectory(id="canonical", code=p["canonical_solution"])]) for p in humaneval.values()]
    results = asyncio.run(_evaluate_all(items))
    failures = {t.id: r.candidates[0].details.get("summary") if r.candidates else r.error
                for (t, _), r in zip(items, results) if r.status is not Status.ok or not r.candidates[0].passed}
    assert len(items) == 80
    assert failures == {}


def _codet_rows(humaneval, shared_data) -> list[dict]:
    rows = _jsonl(shared_data(CODET))
    seen, out = set(), []
    for r in sorted(rows, key=lambda r: r["hash"]):
        if r["task_id"] not in humaneval or r["hash"] in seen:
            continue
        if r["error"] == "timeout" or "ModuleNotFoundError" in r["error"]:
            continue
        seen.add(r["hash"])
        out.append(r)
    return out


def _codejudge_rows(humaneval, shared_data) -> list[dict]:
    labels = {r["key"]: r for r in _jsonl(shared_data(CODEJUDGE_LABELS))}
    gens = _jsonl(shared_data(CODEJUDGE_GENS))
    out = []
    for i, g in enumerate(gens):
        task_id = g["task_id"].replace("Python/", "HumanEval/")
        label = labels.get(f"{g['task_id']}#{g['completion_id']}#{i}")
        if task_id not in humaneval or label is None or label["error"] in ("timeout",) \
                or "ModuleNotFoundError" in (label["error"] or ""):
            continue
        out.append({"task_id": task_id, "completion": g["generation"], "passed": label["passed"],
                    "hash": f"cj{i}"})
    return out


def test_labelled_sample_reproduces_its_labels(humaneval, shared_data):
    codet = _codet_rows(humaneval, shared_data)
    passing = [r for r in codet if r["passed"]][:75]
    failing = [r for r in codet if not r["passed"]][:75]
    judge = _codejudge_rows(humaneval, shared_data)[:60]
    sample = passing + failing + judge
    assert len(sample) >= 200
    by_task: dict[str, list[dict]] = defaultdict(list)
    for r in sample:
        by_task[r["task_id"]].append(r)
    items = [(_task(humaneval[tid]), [Trajectory(id=r["hash"], code=r["completion"]) for r in rows])
             for tid, rows in sorted(by_task.items())]
    results = asyncio.run(_evaluate_all(items))
    label = {r["hash"]: bool(r["passed"]) for r in sample}
    got, statuses = {}, []
    for r in results:
        statuses.append(r.status)
        for c in r.candidates:
            got[c.id] = c.passed
    assert all(s is Status.ok for s in statuses), [r.error for r in results if r.status is not Status.ok]
    wrong = {h: (label[h], got.get(h)) for h in label if got.get(h) != label[h]}
    assert len(wrong) <= 1, wrong  # one flip allowed: the README reports one under heavy load


def test_plausible_wrong_candidates_are_caught(humaneval, shared_data):
    rows = [r for r in _codet_rows(humaneval, shared_data) if not r["passed"] and r["passes_docstring_examples"]]
    assert rows, "no plausible-wrong candidates outside the reserved tasks"
    by_task: dict[str, list[dict]] = defaultdict(list)
    for r in rows:
        by_task[r["task_id"]].append(r)
    items = [(_task(humaneval[tid]), [Trajectory(id=r["hash"], code=r["completion"]) for r in rs])
             for tid, rs in sorted(by_task.items())]
    results = asyncio.run(_evaluate_all(items))
    caught = [c.id for r in results for c in r.candidates if c.passed is False]
    assert len(caught) == len(rows), [c.id for r in results for c in r.candidates if c.passed is not False]
