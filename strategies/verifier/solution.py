"""The task's reference solution (``task.solution``): the tests run against it first, and a test that
fails on it is broken (broken.py), as EvalPlus validates its tests on the ground truth.

It runs through the candidates' own path (code extraction, the sandbox pool, the harness), once
per task content and sandbox setting: the outcomes are kept in this process (bounded), so many
evaluations of one task (a batch, a resume, ``oracle check`` then ``evaluate`` in one process) run
it once. Outcomes that say nothing (a timeout, a fault of ours) are not kept.

A reference that cannot load (a Python one that does not compile; a run that ended before the
test's code ran) leaves the tests unverifiable: a task error naming ``task.solution``, never a
candidate's 0. It is never shown to a judge: only the verifier reads ``task.solution``.
"""

from __future__ import annotations

import asyncio
import dataclasses
import warnings
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Awaitable, Callable, Iterable

from oracle.strategies.verifier.extract import ExtractedCode
from oracle.strategies.verifier.harness import TestOutcome, test_name

FIELD = "task.solution"
CACHE_SIZE = 256


@dataclass(frozen=True)
class ReferenceRun:
    """The reference solution's outcome per code test (by index), or why it cannot validate them."""

    outcomes: dict[int, TestOutcome] = field(default_factory=dict)
    problem: str | None = None
    """``task.solution: ...`` when the reference cannot load: the tests cannot be verified."""
    runs: int = 0
    """Sandbox runs this evaluation spent on it (0 when it came from the cache)."""
    cached: bool = False


_CACHE: OrderedDict[tuple, ReferenceRun] = OrderedDict()


def compile_problem(code: ExtractedCode) -> str | None:
    """A Python reference that does not compile, said before any sandbox starts."""
    if code.code is None:
        return f"{FIELD}: no code to run"
    if code.language != "python":
        return None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            compile(code.code, "<solution>", "exec", dont_inherit=True)
        except SyntaxError as exc:
            return f"{FIELD}: the reference solution does not compile: {exc.msg} (line {exc.lineno})"
        except (ValueError, RecursionError, MemoryError, OverflowError) as exc:
            return f"{FIELD}: the reference solution does not compile: {type(exc).__name__}: {exc}"
    return None


def load_problem(outcomes: dict[int, TestOutcome]) -> str | None:
    """The reference did not load in a run (it ended before the test's code ran)."""
    for outcome in outcomes.values():
        if outcome.before_test:
            return f"{FIELD}: the reference solution does not load: {outcome.message}"
    return None


def _transient(outcome: TestOutcome) -> bool:
    return outcome.our_fault or outcome.outcome == "timeout" or any(
        c.our_fault or c.outcome == "timeout" for c in outcome.cases)


async def reference_run(key: tuple, code: ExtractedCode, indices: Iterable[int],
                        run: Callable[[int], Awaitable[TestOutcome]]) -> ReferenceRun:
    """The reference's outcomes on the tests ``indices`` (``run(i)`` runs test i on it), from the
    cache when this ``key`` (task content, sandbox settings) ran before."""
    hit = _CACHE.get(key)
    if hit is not None:
        _CACHE.move_to_end(key)
        return dataclasses.replace(hit, runs=0, cached=True)
    problem = compile_problem(code)
    if problem is not None:
        return ReferenceRun(problem=problem)
    order = list(indices)
    results = await asyncio.gather(*(run(i) for i in order))
    outcomes = dict(zip(order, results))
    found = ReferenceRun(outcomes=outcomes, problem=load_problem(outcomes), runs=len(order))
    if not any(_transient(o) for o in outcomes.values()):
        _CACHE[key] = found
        while len(_CACHE) > CACHE_SIZE:
            _CACHE.popitem(last=False)
    return found


def unverified(test: object, index: int, exc: BaseException) -> TestOutcome:
    """The reference's outcome when running it raised on our side: it says nothing about the test."""
    return TestOutcome(test_name(test, index), getattr(test, "kind", "?"), "error",  # type: ignore[arg-type]
                       f"the reference run failed on our side: {type(exc).__name__}: {exc}", 0.0,
                       getattr(test, "weight", 1.0), our_fault=True)
