"""One output row per input line: the same shape whichever engine produced it, and the shape of
``oracle evaluate --json`` (``line`` its position in the file, ``key`` null: only a batch resumes).

A row holds the verdict in flat fields (status, evaluator, best, score, passed, escalation; ``reason``
says why a ``skipped`` row was not run: ``budget``) for
summaries and diffs, and the whole ``OracleResult`` under ``result`` for anyone who needs the trace.
Every row names the ``config_hash`` it was computed under: a rerun into the same output resumes
only rows of the same config (oracle/batch/output.py).
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

from oracle.batch.source import InputEntry, parse_entry
from oracle.errors import TaskValidationError
from oracle.tasks._limits import InputLimits
from oracle.results._cost import model_cost
from oracle.results.result import ErrorInfo, OracleResult, Status


DEFAULT_TASK_TIMEOUT_S = 600.0
"""Per line, parsing and evaluating together; a line that needs longer becomes a failed row."""


def invalid_row(entry: InputEntry, err: TaskValidationError, task_id: str | None) -> dict[str, Any]:
    return {"line": entry.line, "task_id": task_id, "key": entry.key, "valid": False,
            "status": Status.failed.value, "evaluator": None, "best": [], "score": None, "passed": None,
            "escalation": None, "latency_ms": None, "cost_usd": None, "calls": 0, "reason": None, "result": None,
            "error": {"type": "TaskValidationError", "message": str(err), "field": err.field}}


def result_row(entry: InputEntry, task_id: str, res: OracleResult, wall_ms: float) -> dict[str, Any]:
    return oracle_row(res, line=entry.line, key=entry.key, wall_ms=wall_ms)


def oracle_row(res: OracleResult, *, line: int | None, key: str | None, wall_ms: float,
               with_route: bool = True) -> dict[str, Any]:
    """The one row shape of ``oracle batch`` and ``oracle evaluate --json``: the verdict in flat
    fields, the whole ``OracleResult`` under ``result`` (without its route trace when
    ``with_route`` is false: ``evaluate --json -q``; the flat ``evaluator`` stays)."""
    result = res.result
    best = list(result.best) if result else []
    top = result.candidate(best[0]) if (result and best) else None
    esc = res.escalation
    return {"line": line, "task_id": res.task_id, "key": key, "valid": True,
            "status": res.status.value, "evaluator": res.route.evaluator, "best": best,
            "score": top.score if top else None, "passed": top.passed if top else None,
            "escalation": ({"id": esc.id, "reason": esc.reason, "blocking": esc.blocking} if esc else None),
            "latency_ms": round(wall_ms, 3), "cost_usd": model_cost(result),
            "calls": result.calls if result else 0, "reason": result.reason if result else None,
            "error": result.error.model_dump() if (result and result.error) else None,
            "result": res.model_dump(mode="json", exclude=None if with_route else {"route"})}


def crash_row(entry: InputEntry, task_id: str | None, valid: bool | None, exc: BaseException,
              wall_ms: float) -> dict[str, Any]:
    """The oracle never raises on evaluator faults; anything else (a timeout, a bug) still gets its row.

    ``valid`` is None when the line had not finished parsing (a timeout while parsing). ``calls``
    is None once evaluation had started (requests may have gone out; the count died with the
    evaluation), 0 when it never started: unknown is not zero.
    """
    return {"line": entry.line, "task_id": task_id, "key": entry.key, "valid": valid,
            "status": Status.failed.value, "evaluator": None, "best": [], "score": None, "passed": None,
            "escalation": None, "latency_ms": round(wall_ms, 3), "cost_usd": None,
            "calls": None if valid else 0, "reason": None,
            "error": ErrorInfo.from_exception(exc).model_dump(), "result": None}


async def evaluate_entry(oracle: Any, entry: InputEntry, timeout_s: float | None = DEFAULT_TASK_TIMEOUT_S,
                         limits: InputLimits | None = None) -> dict[str, Any]:
    """Parse and evaluate one line into its row; never raises, whatever the line holds.

    Parsing runs in a worker thread inside the same time budget as the evaluation, so the event
    loop (and every other line in flight) keeps going while a large line is decoded.
    """
    start = time.perf_counter()
    seen: dict[str, Any] = {"task_id": None, "valid": None}

    async def work() -> dict[str, Any]:
        parsed = await asyncio.to_thread(parse_entry, entry, limits)
        seen["task_id"] = parsed.task_id
        if parsed.item is None:
            assert parsed.error is not None
            seen["valid"] = False
            return invalid_row(entry, parsed.error, parsed.task_id)
        seen["valid"] = True
        res = await oracle.aevaluate(parsed.item)
        return result_row(entry, parsed.item.task.id, res, (time.perf_counter() - start) * 1000)

    try:
        row = await (asyncio.wait_for(work(), timeout_s) if timeout_s else work())
    except asyncio.TimeoutError:
        stage = "parsing" if seen["valid"] is None else "evaluating"
        exc = TimeoutError(f"line {entry.line}: {stage} took longer than the task timeout of {timeout_s:g} s "
                           "(--task-timeout)")
        row = crash_row(entry, seen["task_id"], seen["valid"], exc, (time.perf_counter() - start) * 1000)
    except Exception as exc:  # noqa: BLE001 - one bad line must not end the batch
        row = crash_row(entry, seen["task_id"], seen["valid"], exc, (time.perf_counter() - start) * 1000)
    row["config_hash"] = oracle.config.hash()
    return row
