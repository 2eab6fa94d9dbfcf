"""Running one judge's model calls together: the first failure cancels the rest.

Shared by both judges (the LLM judge's pointwise groups, pairs and tournament rounds; the decision
judge's candidates).
"""

from __future__ import annotations

import asyncio
from typing import Any, Coroutine


async def gather_or_cancel(*aws: Coroutine[Any, Any, Any]) -> list[Any]:
    """Like ``asyncio.gather``, but the first failure cancels the rest and is raised as itself.

    A failed model call must not leave sibling calls running against a client that is about to be
    closed, and callers want the provider error, not an ExceptionGroup around it.
    """
    try:
        async with asyncio.TaskGroup() as group:
            tasks = [group.create_task(a) for a in aws]
    except BaseExceptionGroup as eg:
        raise eg.exceptions[0] from None
    return [t.result() for t in tasks]
