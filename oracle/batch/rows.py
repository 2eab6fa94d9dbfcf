"""One output row per input line: the same shape whichever engine produced it.

A row holds the verdict in flat fields (status, evaluator, best, score, passed, escalation) for
summaries and diffs, and the whole ``OracleResult`` under ``result`` for anyone who needs the trace.
"""

from __future__ import annotations

import time
from typing import Any

from oracle.batch.source import InputEntry
from oracle.result import ErrorInfo, OracleResult, Status


def invalid_row(entry: InputEntry) -> dict[str, Any]:
    err = entry.error
    return {"line": entry.line, "task_id": entry.task_id, "key": entry.key, "valid": False,
            "status": Status.failed.value, "evaluator": None, "best": [], "score": None, "passed": None,
            "escalation": None, "latency_ms": None, "cost_usd": None, "calls": 0, "result": None,
            "error": {"type": "TaskValidationError", "message": str(err) if err else "invalid",
                      "field": getattr(err, "field", None)}}


def result_row(entry: InputEntry, res: OracleResult, wall_ms: float) -> dict[str, Any]:
    result = res.result
    best = list(result.best) if result else []
    top = result.candidate(best[0]) if (result and best) else None
    esc = res.escalation
    return {"line": entry.line, "task_id": entry.task_id, "key": entry.key, "valid": True,
            "status": res.status.value, "evaluator": res.route.evaluator, "best": best,
            "score": top.score if top else None, "passed": top.passed if top else None,
            "escalation": ({"id": esc.id, "reason": esc.reason, "blocking": esc.blocking} if esc else None),
            "latency_ms": round(wall_ms, 3), "cost_usd": result.cost_usd if result else None,
            "calls": result.calls if result else 0,
            "error": result.error.model_dump() if (result and result.error) else None,
            "result": res.model_dump(mode="json")}


def crash_row(entry: InputEntry, exc: BaseException, wall_ms: float) -> dict[str, Any]:
    """The oracle never raises on evaluator faults; anything else still gets its row."""
    return {"line": entry.line, "task_id": entry.task_id, "key": entry.key, "valid": True,
            "status": Status.failed.value, "evaluator": None, "best": [], "score": None, "passed": None,
            "escalation": None, "latency_ms": round(wall_ms, 3), "cost_usd": None, "calls": 0,
            "error": ErrorInfo.from_exception(exc).model_dump(), "result": None}


async def evaluate_entry(oracle: Any, entry: InputEntry, timeout_s: float | None = None) -> dict[str, Any]:
    """Evaluate one valid entry into its row; never raises."""
    import asyncio

    start = time.perf_counter()
    try:
        coro = oracle.aevaluate(entry.item)
        res = await (asyncio.wait_for(coro, timeout_s) if timeout_s else coro)
    except asyncio.TimeoutError:
        return crash_row(entry, TimeoutError(f"task exceeded {timeout_s}s"), (time.perf_counter() - start) * 1000)
    except Exception as exc:  # noqa: BLE001 - one bad task must not end the batch
        return crash_row(entry, exc, (time.perf_counter() - start) * 1000)
    return result_row(entry, res, (time.perf_counter() - start) * 1000)
