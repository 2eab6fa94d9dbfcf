"""``--import humaneval``: the HumanEval problems not reserved, each with a few labelled model samples.

Why this set: it has hidden tests (so the verifier can label every candidate by execution) and
model-written candidates with execution labels made independently (``codet/``), so a judge arm can
be audited against the tests and the gold labels at once. Every task listed in
``suite/reserved_keys.json`` is dropped (oracle/comparison/_reserved.py) and counted.

Per task, up to ``per_task`` unique samples (by the labels file's hash): one passing sample when
the task has one, the rest failing ones. Samples whose label depends on the machine (a
``ModuleNotFoundError`` or a ``timeout``) are left out, as the data README advises. The choice and
the order shown are seeded, so a passing sample is not always first. Each candidate carries
``metadata.model`` (the model that wrote it), which the bias report's ``self_preference`` reads.
"""

from __future__ import annotations

import gzip
import json
import random
from pathlib import Path
from typing import Any

from oracle.comparison._labels import LabelledItem, parse_item
from oracle.comparison._reserved import Reserved

HUMANEVAL_FILE = "humaneval/HumanEval.jsonl.gz"
SAMPLES_FILE = "codet/HumanEval_codegen16B_per_sample.jsonl.gz"
SAMPLE_MODEL = "CodeGen-Mono-16B"
UNSTABLE_ERRORS = ("ModuleNotFoundError", "timeout")
"""Failures whose label depends on what is installed or on load: never chosen as a candidate."""


def _jsonl_gz(path: Path) -> list[dict[str, Any]]:
    with gzip.open(path, "rt", encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


def _stable(sample: dict[str, Any]) -> bool:
    error = str(sample.get("error") or "")
    return not any(error.startswith(e) or e in error.split(":")[0] for e in UNSTABLE_ERRORS)


def _pick(samples: list[dict[str, Any]], per_task: int, rng: random.Random) -> list[dict[str, Any]]:
    unique: dict[str, dict[str, Any]] = {}
    for s in sorted(samples, key=lambda s: s["sample_idx"]):
        if _stable(s) and s["completion"].strip():
            unique.setdefault(s["hash"], s)
    passing = [s for s in unique.values() if s["passed"]]
    failing = [s for s in unique.values() if not s["passed"]]
    rng.shuffle(passing)
    rng.shuffle(failing)
    chosen = passing[:1] + failing[: per_task - min(1, len(passing))]
    if len(chosen) < per_task:  # too few failures: fill with other passing samples
        chosen += passing[1: 1 + per_task - len(chosen)]
    rng.shuffle(chosen)
    return chosen


def import_humaneval(data_dir: Path, *, per_task: int = 3, seed: int = 0) -> tuple[list[LabelledItem], int]:
    """(items, reserved tasks dropped): one item per non-reserved HumanEval task with candidates."""
    if per_task < 2:
        raise ValueError("per_task: at least 2 candidates per task")
    reserved = Reserved.load(data_dir)
    problems = _jsonl_gz(data_dir / HUMANEVAL_FILE)
    by_task: dict[str, list[dict[str, Any]]] = {}
    for s in _jsonl_gz(data_dir / SAMPLES_FILE):
        by_task.setdefault(s["task_id"], []).append(s)
    items: list[LabelledItem] = []
    dropped = 0
    for problem in problems:
        task_id = problem["task_id"]
        if reserved.excludes(humaneval_task=task_id, prompt=problem["prompt"]):
            dropped += 1
            continue
        chosen = _pick(by_task.get(task_id, []), per_task, random.Random(f"humaneval:{seed}:{task_id}"))
        if len(chosen) < 2:
            continue
        trajs = [{"id": f"s{s['sample_idx']}", "answer": s["completion"], "code": s["completion"],
                  "metadata": {"model": SAMPLE_MODEL}} for s in chosen]
        passed = {f"s{s['sample_idx']}": bool(s["passed"]) for s in chosen}
        label: dict[str, Any] = {"passed": passed, "evaluator": "verifier"}
        best = [cid for cid, ok in passed.items() if ok]
        if best:
            label["best"] = best
        items.append(parse_item({
            "task": {"id": task_id, "prompt": problem["prompt"], "entry_point": problem["entry_point"],
                     "language": "python", "metadata": {"category": "code_with_tests", "source": "HumanEval + CodeT"},
                     "tests": [{"kind": "check", "code": problem["test"], "name": "official", "timeout_s": 10}]},
            "trajectories": trajs, "label": label}, source=SAMPLES_FILE))
    return items, dropped
