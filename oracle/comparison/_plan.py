"""Which items and runs a comparison holds: selection, seeded limit, the run keys, the manifest.

Pure, except ``check_manifest`` which reads and writes ``DIR/manifest.json``: a rerun into the
same directory resumes only the same comparison (same items, arms, repeats, orders, seed and
config); anything else is refused (exit 2) rather than mixing two comparisons in one file.
"""

from __future__ import annotations

import fnmatch
import json
import random
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

from oracle._internal.safe_files import write_atomic
from oracle._internal.canonical import sha256_json
from oracle.comparison._labels import LabelledItem
from oracle.comparison.records import run_key
from oracle.errors import TaskValidationError

ORDERS_ONE = ("given",)
ORDERS_BOTH = ("given", "reversed")


def select_items(items: Sequence[LabelledItem], patterns: Sequence[str] | None) -> list[LabelledItem]:
    """Items whose id matches any glob pattern (all items when no pattern is given)."""
    if not patterns:
        return list(items)
    return [i for i in items if any(fnmatch.fnmatchcase(i.id, p) for p in patterns)]


def _stratum(item: LabelledItem) -> str:
    return f"{item.label.evaluator or '-'}:{','.join(item.label.kinds())}"


def limit_items(items: Sequence[LabelledItem], limit: int | None, seed: int) -> list[LabelledItem]:
    """At most ``limit`` items, spread over the strata (labelled evaluator x label kinds) in turn,
    each stratum shuffled by ``seed``; the chosen items keep their file order."""
    if limit is None or limit >= len(items):
        return list(items)
    position = {i.id: n for n, i in enumerate(items)}
    strata: dict[str, list[LabelledItem]] = {}
    for item in items:
        strata.setdefault(_stratum(item), []).append(item)
    rng = random.Random(f"oracle-compare:{seed}")
    queues = []
    for name in sorted(strata):
        group = list(strata[name])
        rng.shuffle(group)
        queues.append(group)
    chosen: list[LabelledItem] = []
    while len(chosen) < limit:
        for queue in queues:
            if queue and len(chosen) < limit:
                chosen.append(queue.pop(0))
    return sorted(chosen, key=lambda i: position[i.id])


@dataclass(frozen=True)
class Unit:
    arm: str
    item: LabelledItem
    repeat: int
    order: str

    @property
    def key(self) -> str:
        return run_key(self.arm, self.item.id, self.repeat, self.order)


def plan_units(items: Sequence[LabelledItem], arms: Sequence[str], repeats: int,
               orders: Sequence[str]) -> list[Unit]:
    """Every arm x item x repeat x order; ``routed`` last, so it can report the evaluator run
    it picked instead of running it twice."""
    first = [a for a in arms if a != "routed"]
    later = [a for a in arms if a == "routed"]
    return [Unit(a, i, r, o) for group in (first, later) for a in group
            for i in items for r in range(repeats) for o in orders]


def manifest(items: Sequence[LabelledItem], *, arms: Sequence[str], repeats: int, orders: Sequence[str],
             seed: int, config_hash: str) -> dict[str, Any]:
    return {"items_sha256": sha256_json([i.model_dump(mode="json") for i in items]), "items": len(items),
            "arms": list(arms), "repeats": repeats, "orders": list(orders), "seed": seed,
            "config_hash": config_hash}


def check_manifest(out_dir: Path, wanted: dict[str, Any]) -> None:
    """Write the manifest, or check that the one already there describes this comparison."""
    path = out_dir / "manifest.json"
    if path.exists():
        try:
            found = json.loads(path.read_text(encoding="utf-8"))
        except ValueError:
            found = None
        if found != wanted:
            diff = sorted(k for k in wanted if not isinstance(found, dict) or found.get(k) != wanted[k])
            raise TaskValidationError(
                f"-o: {out_dir} holds the runs of another comparison (differs in {', '.join(diff) or 'format'}); "
                "use a new output directory, or the same settings to resume", field="-o")
        return
    write_atomic(path, json.dumps(wanted, indent=2, sort_keys=True) + "\n")
