"""Seeded candidate placement: which candidate is judged first, sits in seat A first, opens a tournament.

Why seeded: judges prefer positions (the first answer of a batch, seat A of a pair), so the order
candidates are shown in is part of the measurement. An order that follows the input file hides
that bias in the data; an unseeded shuffle makes a score impossible to reproduce. Here every order
comes from a random generator seeded by sha256 over (the configured seed, the task's content hash,
the sorted candidate ids): the same seed gives the same order in every process and on every
machine (never Python's salted ``hash()``), another seed gives another order, and listing the
candidates in another order changes nothing.

``request_seed`` gives the sampling seed a judge sends with repeat ``i`` (where the endpoint takes
one): the configured seed for the first sample, a derived one for the others, so k repeats at
temperature > 0 are k different draws that a rerun draws again.
"""

from __future__ import annotations

import hashlib
import random
from typing import Sequence

from oracle._internal.canonical import canonical_json
from oracle.tasks.task import Task


def _rng(seed: int, task: Task, what: str, ids: Sequence[str]) -> random.Random:
    material = canonical_json({"seed": seed, "task": task.content_hash(), "what": what, "ids": sorted(ids)})
    return random.Random(int.from_bytes(hashlib.sha256(material.encode("utf-8")).digest()[:8], "big"))


def seeded_order(seed: int, task: Task, ids: Sequence[str]) -> list[str]:
    """The candidates in the order the judge meets them (a batch, a tournament's first order)."""
    order = sorted(ids)
    _rng(seed, task, "order", order).shuffle(order)
    return order


def first_seat(seed: int, task: Task, a: str, b: str) -> tuple[str, str]:
    """The pair as (seat A first, then seat B): a seeded coin per pair, independent of the schedule."""
    x, y = sorted((a, b))
    return (x, y) if _rng(seed, task, "seat", (x, y)).random() < 0.5 else (y, x)


def request_seed(seed: int, repeat: int) -> int:
    """The sampling seed of repeat ``repeat``: ``seed`` itself for the first, derived for the rest."""
    if repeat == 0:
        return seed
    digest = hashlib.sha256(canonical_json({"seed": seed, "repeat": repeat}).encode("utf-8")).digest()
    return int.from_bytes(digest[:4], "big") & 0x7FFFFFFF


def cache_salt(*, repeat: int, run_repeat: int, seed: int) -> dict[str, int] | None:
    """What keys a repeated request apart in the response cache; zero values are left out, so a
    single call at the default seed keys as it always did (None)."""
    salt = {k: v for k, v in (("repeat", repeat), ("run_repeat", run_repeat), ("seed", seed)) if v}
    return salt or None


__all__ = ["cache_salt", "first_seat", "request_seed", "seeded_order"]
