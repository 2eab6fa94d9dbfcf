"""Convert dev-suite items (<data>/suite/dev_suite.jsonl) into oracle-router task files.

Lives in benchmarks/, not the library: the suite's format is a measurement format, not ours.
The conversion carries over only what a user would have: the prompt, the candidates, runnable
tests where the item ships them, and the fixed-option question where the item has one. Gold labels
and ``suggested_evaluator`` are never copied into the task. The data directory is ``--data`` of the
calling benchmark, else ``$ORACLE_DATA_DIR``, else ../shared/data next to the repository
(``benchmarks/humaneval_sample.data_dir``). Imports nothing from oracle.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Iterator

SUITE_FILE = Path("suite") / "dev_suite.jsonl"


def suite_path(data: str | os.PathLike | None = None) -> Path:
    """The dev suite file under the shared data directory (``data``: an explicit --data value)."""
    try:
        from benchmarks.humaneval_sample import data_dir
    except ImportError:  # run with benchmarks/ itself on sys.path
        from humaneval_sample import data_dir  # type: ignore[no-redef]

    return data_dir(data, required=(SUITE_FILE,)) / SUITE_FILE


def load_items(path: Path | None = None) -> list[dict[str, Any]]:
    path = path or suite_path()
    with path.open(encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


def to_task(item: dict[str, Any]) -> dict[str, Any]:
    """One suite item -> ``{"task": ..., "trajectories": ...}``."""
    task: dict[str, Any] = {"id": item["id"], "prompt": item["task"]}
    trajectories = [{"id": c["id"], "answer": c["content"]} for c in item["candidates"]]
    tests = item.get("tests")
    if tests and tests.get("kind") == "humaneval_check":
        task.update(language="python", entry_point=tests["entry_point"],
                    tests=[{"kind": "check", "name": "official", "code": tests["test"]}])
    if "question" in item:
        options = item.get("options") or []
        if options == ["yes", "no"]:
            # One response, one yes/no question about it.
            task["questions"] = [{"id": "q", "type": "likelihood", "instructions": item["question"]}]
        else:
            # Options name the candidates (A..D or c0, c1): ask the question of each candidate.
            task["questions"] = [{"id": "q", "type": "likelihood",
                                  "instructions": f"{item['question']} Is this candidate that answer?"}]
    return {"task": task, "trajectories": trajectories}


def suite_tasks(path: Path | None = None) -> Iterator[tuple[dict[str, Any], dict[str, Any]]]:
    for item in load_items(path):
        yield item, to_task(item)
