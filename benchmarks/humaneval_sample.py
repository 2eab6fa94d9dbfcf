"""The HumanEval candidate sample the sandbox benchmarks share, and where the shared data lives.

The sample is the first N labelled CodeT candidates (``codet/HumanEval_codegen16B_per_sample.jsonl.gz``)
of NON-reserved HumanEval tasks: rows sorted by ``hash``, one row per hash, rows labelled ``timeout``
skipped (timing-sensitive labels, see the data README). Reserved tasks are those listed under
``humaneval_task_ids`` in ``suite/reserved_keys.json``; no row of theirs is ever read into the sample.

The data directory is ``--data PATH`` if given, else ``$ORACLE_DATA_DIR``, else ``../shared/data``
relative to the repository root. Nothing here imports oracle: the harness benchmark loads this module
before putting an older checkout of oracle first on ``sys.path``.
"""

from __future__ import annotations

import gzip
import json
import os
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DATA_ENV = "ORACLE_DATA_DIR"
CODET_FILE = Path("codet") / "HumanEval_codegen16B_per_sample.jsonl.gz"
HUMANEVAL_FILE = Path("humaneval") / "HumanEval.jsonl.gz"
RESERVED_FILE = Path("suite") / "reserved_keys.json"


def data_dir(explicit: str | os.PathLike | None = None, *,
             required: tuple[Path, ...] = (CODET_FILE, HUMANEVAL_FILE, RESERVED_FILE)) -> Path:
    """The shared data directory (see module docstring); raises SystemExit naming what was tried.

    ``required``: the files (relative to the directory) that must be there."""
    if explicit:
        path, source = Path(explicit), "--data"
    elif os.environ.get(DATA_ENV):
        path, source = Path(os.environ[DATA_ENV]), f"${DATA_ENV}"
    else:
        path, source = ROOT.parent / "shared" / "data", "the default ../shared/data next to the repository"
    path = path.expanduser().resolve()
    missing = [str(p) for p in required if not (path / p).is_file()]
    if missing:
        raise SystemExit(f"shared data not found at {path} (from {source}): missing {', '.join(missing)}; "
                         f"pass --data PATH or set {DATA_ENV}")
    return path


def _jsonl(path: Path) -> list[dict]:
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


def reserved_task_ids(data: Path) -> set[str]:
    return set(json.loads((data / RESERVED_FILE).read_text(encoding="utf-8"))["humaneval_task_ids"])


def problems(data: Path) -> dict[str, dict]:
    """The NON-reserved HumanEval problems by task id (task_id, prompt, entry_point, test, ...)."""
    reserved = reserved_task_ids(data)
    return {p["task_id"]: p for p in _jsonl(data / HUMANEVAL_FILE) if p["task_id"] not in reserved}


def codet_candidates(data: Path, n: int) -> list[dict]:
    """The first ``n`` CodeT rows of the sample, in hash order (fields: task_id, hash, completion,
    passed, error, ...)."""
    reserved = reserved_task_ids(data)
    seen: set[str] = set()
    chosen: list[dict] = []
    for row in sorted(_jsonl(data / CODET_FILE), key=lambda r: r["hash"]):
        if row["task_id"] in reserved or row["hash"] in seen or row["error"] == "timeout":
            continue
        seen.add(row["hash"])
        chosen.append(row)
        if len(chosen) == n:
            break
    return chosen


def by_task(rows: list[dict]) -> dict[str, list[dict]]:
    """Rows grouped by task id, tasks in order of first appearance, rows in sample order."""
    groups: dict[str, list[dict]] = {}
    for row in rows:
        groups.setdefault(row["task_id"], []).append(row)
    return groups
