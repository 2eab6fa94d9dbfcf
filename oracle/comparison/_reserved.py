"""Records kept out of every comparison: ``suite/reserved_keys.json`` of the shared data.

Why here: those records are held back for independent measurement. A converter that builds
labelled items from the shared pools (the dev suite, HaluEval) drops every record the file lists,
every record whose normalized prompt equals a listed record's prompt (whichever data set it lives
in), and every item on a listed HumanEval task. The rule is the data README's, applied once.
"""

from __future__ import annotations

import csv
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

RESERVED_FILE = "suite/reserved_keys.json"

_LLMBAR_SUBSETS = {"natural": "LLMBar/Natural", "adversarial-neighbor": "LLMBar/Adversarial/Neighbor",
                   "adversarial-gptinst": "LLMBar/Adversarial/GPTInst",
                   "adversarial-gptout": "LLMBar/Adversarial/GPTOut",
                   "adversarial-manual": "LLMBar/Adversarial/Manual"}
"""Suite part suffix (``judge/llmbar-<suffix>/<i>``) -> the subset named in reserved keys."""


def normalize_prompt(text: str) -> str:
    """Whitespace runs collapsed to one space, lower-cased (the reserved file's normalization)."""
    return " ".join(str(text).split()).lower()


def _jsonl(path: Path) -> list[dict[str, Any]]:
    with path.open(encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


def haluqa_prompt(row: dict[str, Any]) -> str:
    """A HaluEval QA record's task text, as the dev suite writes it."""
    return f"Knowledge: {row['knowledge']}\n\nQuestion: {row['question']}"


def pandalm_prompt(row: dict[str, Any]) -> str:
    return row["instruction"] + (("\n\n" + row["input"]) if str(row["input"]).strip() else "")


def _prompts_of(data: Path, kind: str, sub: str, ids: list[str]) -> set[str]:
    """Normalized prompts of the listed records of one pool."""
    if kind == "llmbar":
        rows = json.loads((data / "llmbar" / sub / "dataset.json").read_text(encoding="utf-8"))
        return {normalize_prompt(rows[int(i)]["input"]) for i in ids}
    if kind == "hhh":
        rows = json.loads((data / "hhh_alignment" / sub / "task.json").read_text(encoding="utf-8"))["examples"]
        return {normalize_prompt(rows[int(i)]["input"]) for i in ids}
    if kind == "pandalm":
        by_idx = {str(x["idx"]): x for x in json.loads((data / "pandalm" / "testset-v1.json").read_text())}
        return {normalize_prompt(pandalm_prompt(by_idx[i])) for i in ids if i in by_idx}
    if kind == "truthfulqa":
        with (data / "truthfulqa" / "TruthfulQA.csv").open(encoding="utf-8-sig") as fh:
            rows = list(csv.DictReader(fh))
        return {normalize_prompt(rows[int(i)]["Question"]) for i in ids}
    if kind == "halueval-general":
        wanted = set(ids)
        return {normalize_prompt(x["user_query"]) for x in _jsonl(data / "halueval" / "general_data.json")
                if str(x["ID"]) in wanted}
    if kind == "halueval-qa":
        rows = _jsonl(data / "halueval" / "qa_one-turn_data.json")
        return {normalize_prompt(haluqa_prompt(rows[int(i)])) for i in ids}
    return set()


@dataclass(frozen=True)
class Reserved:
    """The reserved keys, HumanEval tasks and normalized prompts of one data directory."""

    keys: frozenset[str]
    humaneval_tasks: frozenset[str]
    prompts: frozenset[str]

    @classmethod
    def load(cls, data: Path) -> "Reserved":
        doc = json.loads((data / RESERVED_FILE).read_text(encoding="utf-8"))
        keys = frozenset(doc["keys"])
        grouped: dict[tuple[str, str], list[str]] = {}
        for key in keys:
            head, _, tail = key.rpartition(":")
            kind, _, sub = head.partition(":")
            grouped.setdefault((kind, sub), []).append(tail)
        prompts: set[str] = set()
        for (kind, sub), ids in sorted(grouped.items()):
            prompts |= _prompts_of(data, kind, sub, ids)
        return cls(keys=keys, humaneval_tasks=frozenset(doc["humaneval_task_ids"]), prompts=frozenset(prompts))

    def excludes(self, *, pool_key: str | None = None, prompt: str | None = None,
                 humaneval_task: str | None = None) -> bool:
        """True when a record is reserved by key, by prompt or by HumanEval task."""
        return bool((pool_key is not None and pool_key in self.keys)
                    or (prompt is not None and normalize_prompt(prompt) in self.prompts)
                    or (humaneval_task is not None and humaneval_task in self.humaneval_tasks))


_HUMANEVAL = re.compile(r"(HumanEval/\d+)$")


def suite_pool_key(item_id: str) -> tuple[str | None, str | None]:
    """(pool key in reserved_keys.json form, HumanEval task id) for a suite item id."""
    found = _HUMANEVAL.search(item_id)
    if item_id.startswith("code-verify/") and found:
        return None, found.group(1)
    part, _, index = item_id.rpartition("/")
    kind, _, name = part.partition("/")
    if kind == "judge" and name.startswith("llmbar-"):
        subset = _LLMBAR_SUBSETS.get(name[len("llmbar-"):])
        return (f"llmbar:{subset}:{index}" if subset else None), None
    if kind == "judge" and name == "mtbench-human":
        return f"llmbar:Processed/MT-Bench:{index}", None
    if kind == "judge" and name == "pandalm":
        return f"pandalm:{index}", None
    if kind == "judge" and name.startswith("hhh-"):
        return f"hhh:{name[len('hhh-'):]}:{index}", None
    if kind == "decision" and name == "truthfulqa-mc":
        return f"truthfulqa:{index}", None
    if kind == "decision" and name in ("halueval-general", "halueval-qa"):
        return f"{name}:{index}", None
    return None, None
