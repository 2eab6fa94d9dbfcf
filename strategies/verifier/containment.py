"""One candidate never fails the task: a fault while judging one candidate stays that candidate's.

Why: the verifier judges many (candidate, test) pairs, and each pair runs our code on values the
candidate chose: a returned integer with 10**6 digits, a lone surrogate in a string, a tool call
whose arguments nest 10,000 levels deep. Any exception there used to escape ``evaluate`` and fail
the whole task, so one hostile candidate left every honest one unscored. Each pair is now judged
inside ``judge_safely``, and its faults are told apart by whose they are:

- a fault on the candidate's values (any ``Exception`` that is not a ``SandboxError``: an overflow,
  an encoding error, a comparator meeting a type it did not expect, code extraction failing on
  odd input) makes that test ``error`` with the reason, like any other crash of the candidate's.
  It can never become a pass.
- a ``SandboxError`` on one run (the pool could not give that run a working pair of workers) is
  ours, never the candidate's: the test is ``error`` with the reason, the candidate is left
  unscored (``status=failed``, no score: never a 0 presented as its fault) and the result carries
  a ``sandbox_failure`` concern naming it.

The task as a whole fails only when a fault of ours hits every candidate (no sandbox at all, every
run's workers failing, every candidate unscored); see ``strategy.py``. Cancellation and other
``BaseException``\\ s (KeyboardInterrupt, SystemExit) are never contained.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Awaitable, Callable

from oracle.errors import SandboxError, exception_text
from oracle.strategies.verifier.harness import TestOutcome, test_name

MESSAGE_LIMIT = 300
"""Longest exception text kept in a contained outcome's message (a huge value stays out of it)."""


def describe(exc: BaseException) -> str:
    """``Type: message``, cut to ``MESSAGE_LIMIT`` characters, printable whatever the message holds."""
    text = exception_text(exc, MESSAGE_LIMIT)
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def fault_outcome(test: object, index: int, exc: BaseException, *, integrity: str = "isolated") -> TestOutcome:
    """The test's outcome when judging it raised on the candidate's values: ``error``, with why."""
    return TestOutcome(test_name(test, index), getattr(test, "kind", "?"), "error",  # type: ignore[arg-type]
                       f"the candidate's result could not be judged: {describe(exc)}", 0.0,
                       getattr(test, "weight", 1.0), integrity)


def sandbox_outcome(test: object, index: int, exc: SandboxError) -> TestOutcome:
    """The test's outcome when the sandbox failed on this one run (our fault)."""
    return TestOutcome(test_name(test, index), getattr(test, "kind", "?"), "error",  # type: ignore[arg-type]
                       f"the sandbox failed on this run (our fault, not the candidate's): {describe(exc)}",
                       0.0, getattr(test, "weight", 1.0))


@dataclass
class Faults:
    """What was contained during one evaluation, by candidate."""

    sandbox: dict[str, list[str]] = field(default_factory=dict)
    """Candidate id -> the sandbox failures of its runs (the candidate is left unscored)."""
    judged: set[tuple[str, int]] = field(default_factory=set)
    """(candidate id, test index) pairs whose outcome is a contained fault, not a run's verdict."""
    first_sandbox_error: SandboxError | None = None

    def sandbox_hit(self, cid: str) -> bool:
        return cid in self.sandbox


async def judge_safely(cid: str, index: int, test: object, judge: Callable[[], Awaitable[TestOutcome]],
                       faults: Faults) -> TestOutcome:
    """``judge()``, with its faults contained as the module docstring says."""
    try:
        return await judge()
    except SandboxError as exc:
        faults.sandbox.setdefault(cid, []).append(f"{test_name(test, index)}: {describe(exc)}")  # type: ignore[arg-type]
        faults.judged.add((cid, index))
        if faults.first_sandbox_error is None:
            faults.first_sandbox_error = exc
        return sandbox_outcome(test, index, exc)
    except Exception as exc:  # noqa: BLE001 - see the module docstring: the candidate's values, its test
        faults.judged.add((cid, index))
        return fault_outcome(test, index, exc)
