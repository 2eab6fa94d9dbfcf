"""Private: SWE-bench-style rows and model predictions -> repository task files (``oracle import swebench``).

A dataset row (``instance_id``, ``repo`` as ``owner/name``, ``base_commit``, ``patch``,
``test_patch``, ``FAIL_TO_PASS``, ``PASS_TO_PASS``; the last two lists of test ids, or JSON strings
of such lists as the published dataset has them) becomes one task: the repository at the base
commit, the test patch, one ``repo_tests`` test. Each prediction (``instance_id``,
``model_name_or_path``, ``model_patch``) becomes one trajectory of its instance's task, with the
model's name as its id; a null ``model_patch`` is an empty patch (a candidate that changes nothing).

The gold ``patch`` is kept as ``task.metadata["swebench"]["gold_patch"]``, not as
``task.solution`` (which is code the verifier runs code tests on): it is carried for whoever wants
it, and nothing reads it. Without predictions each task gets the gold patch as its one candidate
(``gold``), which checks the import itself: the gold patch should resolve every instance.

Every problem is bad input naming where it is: the row (file and line, and its ``instance_id``),
the field, and for a repository that cannot be found, every path tried.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator

from oracle.errors import TaskValidationError

DATASET_FIELDS = ("instance_id", "repo", "base_commit", "patch", "test_patch", "FAIL_TO_PASS", "PASS_TO_PASS")
PREDICTION_FIELDS = ("instance_id", "model_name_or_path", "model_patch")
KEPT_FIELDS = ("version", "environment_setup_commit", "created_at")
"""Dataset fields carried into ``task.metadata["swebench"]`` when present."""
GOLD_ID = "gold"
_REPO_NAME = re.compile(r"^[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+$")


@dataclass(frozen=True)
class Record:
    """One row of an input file and where it is (``file:line 3``, ``file[2]``, ``file['id']``)."""

    where: str
    data: dict[str, Any]


def _bad(where: str, field_name: str, reason: str) -> TaskValidationError:
    return TaskValidationError(f"{where}: {field_name}: {reason}", field=field_name)


def read_records(path: Path) -> list[Record]:
    """Every object of a JSONL file (one per non-blank line), or of a JSON list or object (an object
    maps keys to rows: SWE-bench's older predictions format). Anything else is bad input."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise TaskValidationError(f"no such file: {path}", field="(file)") from None
    except IsADirectoryError:
        raise TaskValidationError(f"is a directory, not a file: {path}", field="(file)") from None
    except UnicodeDecodeError as exc:
        raise TaskValidationError(f"{path}: not UTF-8 text (byte {exc.start})", field="(file)") from None
    except OSError as exc:
        raise TaskValidationError(f"cannot read {path}: {exc.strerror}", field="(file)") from None
    records: list[Record] = []
    if path.suffix.lower() == ".jsonl":
        for number, line in enumerate(text.split("\n"), 1):
            if not line.strip():
                continue
            where = f"{path}:line {number}"
            try:
                value = json.loads(line)
            except ValueError as exc:
                raise TaskValidationError(f"{where}: invalid JSON: {exc}", field="(line)") from None
            if not isinstance(value, dict):
                raise TaskValidationError(f"{where}: expected a JSON object, got {type(value).__name__}",
                                          field="(line)")
            records.append(Record(where, value))
        return records
    try:
        value = json.loads(text)
    except ValueError as exc:
        raise TaskValidationError(f"{path}: invalid JSON: {exc}", field="(file)") from None
    items: Iterator[tuple[str, Any]]
    if isinstance(value, list):
        items = ((f"{path}[{i}]", v) for i, v in enumerate(value))
    elif isinstance(value, dict):
        items = ((f"{path}[{k!r}]", {"instance_id": k, **v} if isinstance(v, dict) else v) for k, v in value.items())
    else:
        raise TaskValidationError(f"{path}: expected JSON lines, a list or an object of rows", field="(file)")
    for where, row in items:
        if not isinstance(row, dict):
            raise TaskValidationError(f"{where}: expected a JSON object, got {type(row).__name__}", field="(line)")
        records.append(Record(where, row))
    return records


def _text(record: Record, name: str, *, nullable: bool = False) -> str:
    if name not in record.data:
        raise _bad(record.where, name, "missing")
    value = record.data[name]
    if value is None and nullable:
        return ""
    if not isinstance(value, str):
        raise _bad(record.where, name, f"expected text, got {type(value).__name__}")
    return value


def _test_ids(record: Record, name: str) -> list[str]:
    """A list of test ids, given as a list or as a JSON string of one; duplicates dropped (in order)."""
    if name not in record.data:
        raise _bad(record.where, name, "missing")
    value = record.data[name]
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError:
            raise _bad(record.where, name, "a string that is not a JSON list of test ids") from None
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise _bad(record.where, name, "expected a list of test ids (or a JSON string of one)")
    return list(dict.fromkeys(value))


def _is_git_repository(path: Path) -> bool:
    """A work tree (``.git`` directory or file) or a bare repository (HEAD, objects, refs)."""
    if (path / ".git").exists():
        return True
    return (path / "HEAD").is_file() and (path / "objects").is_dir() and (path / "refs").is_dir()


@dataclass
class RepositoryFinder:
    """Finds ``owner/name`` under ``root``: ``owner__name`` or ``owner/name`` (a clone), else
    ``owner__name.bundle``; each repository looked up once."""

    root: Path
    found: dict[str, dict[str, str]] = field(default_factory=dict)

    def find(self, repo: str, where: str) -> dict[str, str]:
        if repo in self.found:
            return self.found[repo]
        if not _REPO_NAME.match(repo) or ".." in repo.split("/"):
            raise _bad(where, "repo", f"{repo!r} is not owner/name")
        owner, name = repo.split("/")
        tried = []
        for path, kind in ((self.root / f"{owner}__{name}", "path"), (self.root / owner / name, "path"),
                           (self.root / f"{owner}__{name}.bundle", "bundle")):
            if kind == "path" and path.is_dir() and _is_git_repository(path):
                self.found[repo] = {"path": os.path.abspath(path)}
                return self.found[repo]
            if kind == "bundle" and path.is_file():
                self.found[repo] = {"bundle": os.path.abspath(path)}
                return self.found[repo]
            why = "missing" if not path.exists() else "not a git repository" if kind == "path" else "not a file"
            tried.append(f"{path} ({why})")
        raise _bad(where, "repo", f"no clone or bundle of {repo} under {self.root}: tried " + ", ".join(tried))


def _instance(record: Record) -> str:
    instance = _text(record, "instance_id")
    if not instance.strip():
        raise _bad(record.where, "instance_id", "empty")
    return instance


def task_of(record: Record, finder: RepositoryFinder) -> dict[str, Any]:
    """The task a dataset row describes (its fields checked; the repository found)."""
    instance = _instance(record)
    where = f"{record.where} ({instance})"
    named = Record(where, record.data)
    for name in DATASET_FIELDS:
        if name not in record.data:
            raise _bad(where, name, "missing")
    repo = _text(named, "repo")
    gold = _text(named, "patch")
    statement = record.data.get("problem_statement")
    kept = {k: record.data[k] for k in KEPT_FIELDS if isinstance(record.data.get(k), str)}
    return {
        "id": instance,
        "prompt": statement if isinstance(statement, str) and statement.strip() else
        f"Resolve {instance} in the repository {repo}.",
        "repository": {**finder.find(repo, where), "commit": _text(named, "base_commit")},
        "test_patch": _text(named, "test_patch"),
        "tests": [{"kind": "repo_tests", "fail_to_pass": _test_ids(named, "FAIL_TO_PASS"),
                   "pass_to_pass": _test_ids(named, "PASS_TO_PASS")}],
        "metadata": {"swebench": {"instance_id": instance, "repo": repo, "gold_patch": gold, **kept}},
    }


@dataclass
class Imported:
    """What an import produced: the task documents in dataset order, and what was left out."""

    items: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    """(where the row was, ``{"task": ..., "trajectories": [...]}``)."""
    without_predictions: list[str] = field(default_factory=list)
    """Instances of the dataset that no prediction names (left out)."""

    @property
    def trajectories(self) -> int:
        return sum(len(doc["trajectories"]) for _, doc in self.items)


def _predictions_by_instance(records: list[Record], known: dict[str, str]) -> dict[str, list[dict[str, Any]]]:
    out: dict[str, list[dict[str, Any]]] = {}
    seen: dict[tuple[str, str], str] = {}
    for record in records:
        instance = _instance(record)
        where = f"{record.where} ({instance})"
        named = Record(where, record.data)
        model = _text(named, "model_name_or_path")
        if not model.strip():
            raise _bad(where, "model_name_or_path", "empty")
        patch = _text(named, "model_patch", nullable=True)
        if instance not in known:
            raise _bad(where, "instance_id", "no row of the dataset has this instance")
        if (instance, model) in seen:
            raise _bad(where, "model_name_or_path", f"{model!r} predicted {instance} already at "
                                                    f"{seen[instance, model]}")
        seen[instance, model] = record.where
        out.setdefault(instance, []).append({"id": model, "patch": patch})
    return out


def import_rows(dataset: list[Record], predictions: list[Record] | None, finder: RepositoryFinder, *,
                with_gold: bool = False) -> Imported:
    """Task documents for the dataset rows (with predictions: only the instances they name)."""
    tasks: list[tuple[str, dict[str, Any]]] = []
    known: dict[str, str] = {}
    for record in dataset:
        instance = _instance(record)
        if instance in known:
            raise _bad(f"{record.where} ({instance})", "instance_id", f"given already at {known[instance]}")
        known[instance] = record.where
        tasks.append((record.where, task_of(record, finder)))
    by_instance = _predictions_by_instance(predictions, known) if predictions is not None else None
    result = Imported()
    for where, task in tasks:
        gold = {"id": GOLD_ID, "patch": task["metadata"]["swebench"]["gold_patch"]}
        if by_instance is None:
            trajectories = [gold]
        else:
            trajectories = list(by_instance.get(task["id"], []))
            if not trajectories:
                result.without_predictions.append(task["id"])
                continue
            if with_gold:
                if any(t["id"] == GOLD_ID for t in trajectories):
                    raise _bad(where, "model_name_or_path", f"a model is named {GOLD_ID!r}, the id --gold gives "
                                                            "the gold patch")
                trajectories.append(gold)
        result.items.append((where, {"task": task, "trajectories": trajectories}))
    return result


__all__ = ["DATASET_FIELDS", "GOLD_ID", "PREDICTION_FIELDS", "Imported", "Record", "RepositoryFinder",
           "import_rows", "read_records", "task_of"]
