"""Asking a person: the ``HumanOracle`` protocol and a console implementation for the CLI.

A human oracle answers a request at once or returns None ("not now"); then the request goes to the
``EscalationStore`` and the evaluation waits as ``pending``. Both a sync (``ask``) and an async
(``aask``) form exist because a reviewer UI may be either; ``ask_human`` drives whichever the
object has, running a blocking ``ask`` in a thread so an event loop is never stalled.
"""

from __future__ import annotations

import asyncio
import sys
from typing import Any, Callable, Protocol, TextIO, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field, field_validator

from oracle.results.result import Escalation


class HumanAnswer(BaseModel):
    """A person's answer: free text, a choice among the request's options, or both."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    text: str = Field(default="", max_length=100_000)
    choice: str | None = Field(default=None, max_length=10_000)
    answered_by: str | None = Field(default=None, max_length=1_000)

    @field_validator("text", "choice", "answered_by")
    @classmethod
    def _encodable(cls, value: str | None) -> str | None:
        """Text that could not be stored or printed (a lone surrogate, as a command line holding
        bytes that are not UTF-8 gives) is refused here, naming the field."""
        from oracle._internal.decoded import scalar_problem

        problem = scalar_problem(value) if value is not None else None
        if problem is not None:
            raise ValueError(problem)
        return value


@runtime_checkable
class HumanOracle(Protocol):
    """Answers an escalation request now, or returns None to leave it pending."""

    def ask(self, request: Escalation) -> HumanAnswer | None:
        ...


@runtime_checkable
class AsyncHumanOracle(Protocol):
    """The async form of ``HumanOracle``."""

    async def aask(self, request: Escalation) -> HumanAnswer | None:
        ...


async def ask_human(human: Any, request: Escalation) -> HumanAnswer | None:
    """Ask through ``aask`` when the object has it, else run ``ask`` in a worker thread."""
    if hasattr(human, "aask"):
        return await human.aask(request)
    if hasattr(human, "ask"):
        return await asyncio.to_thread(human.ask, request)
    raise TypeError(f"{type(human).__name__} is not a HumanOracle (needs ask or aask)")


class CallbackHuman:
    """Adapts a plain function ``request -> HumanAnswer | str | None`` (a reviewer queue, a UI)."""

    def __init__(self, fn: Callable[[Escalation], HumanAnswer | str | None]) -> None:
        self.fn = fn

    def ask(self, request: Escalation) -> HumanAnswer | None:
        out = self.fn(request)
        if out is None or isinstance(out, HumanAnswer):
            return out
        return parse_answer(str(out), request)


def parse_answer(line: str, request: Escalation) -> HumanAnswer | None:
    """Read a typed line: an option (by name or 1-based number) is a choice, anything else text."""
    line = line.strip()
    if not line:
        return None
    options = request.options or []
    if line.isdigit() and 1 <= int(line) <= len(options):
        return HumanAnswer(choice=options[int(line) - 1], answered_by="console")
    if line in options:
        return HumanAnswer(choice=line, answered_by="console")
    return HumanAnswer(text=line, answered_by="console")


class ConsoleHuman:
    """Prints the question and options on a terminal and reads one line; empty means "later"."""

    def __init__(self, stdin: TextIO | None = None, stdout: TextIO | None = None) -> None:
        self.stdin = stdin or sys.stdin
        self.stdout = stdout or sys.stderr

    def ask(self, request: Escalation) -> HumanAnswer | None:
        out = self.stdout
        flag = "blocks the verdict" if request.blocking else "advisory"
        print(f"\n[escalation {request.id} - {request.reason}, {flag}]", file=out)
        print(request.question, file=out)
        for i, option in enumerate(request.options or [], start=1):
            print(f"  {i}. {option}", file=out)
        print("answer (option number/name or text; empty = answer later): ", end="", file=out, flush=True)
        line = self.stdin.readline()
        return parse_answer(line, request) if line else None
