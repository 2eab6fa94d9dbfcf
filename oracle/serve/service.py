"""The state behind the HTTP endpoints (the Oracle, the escalation store, jobs and batches) and the
refusals the handlers raise: everything of the service that is not FastAPI routing (oracle.serve.app)."""

from __future__ import annotations

import asyncio
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

from oracle.config.model import OracleConfig
from oracle.errors import AlreadyAnswered, EscalationNotFound, EscalationStoreError, TaskValidationError
from oracle.routing.route import route_adapter
from oracle.serve.api_models import EscalationSummary
from oracle.serve.jobs import Batch, BatchRegistry, Full, JobRegistry
from oracle.serve.settings import ServeSettings
from oracle.tasks.task import TaskInput

if TYPE_CHECKING:
    from oracle.serve.guard import Guard


def server_config(config: OracleConfig, settings: ServeSettings) -> OracleConfig:
    """The evaluation config the server runs: ``verifier.allow_in_process`` only if the server allows it."""
    if settings.allow_in_process or not config.verifier.allow_in_process:
        return config
    verifier = config.verifier.model_copy(update={"allow_in_process": False})
    return config.model_validate({**config.model_dump(), "verifier": verifier.model_dump()})


class ApiProblem(Exception):
    """An expected refusal raised deep in a handler; becomes ``ApiError`` with ``status``."""

    def __init__(self, status: int, error: str, message: str, *, field: str | None = None,
                 headers: dict[str, str] | None = None) -> None:
        super().__init__(message)
        self.status, self.error, self.message, self.field, self.headers = status, error, message, field, headers


def invalid_task(exc: TaskValidationError) -> ApiProblem:
    field = "(body)" if exc.field == "(file)" else exc.field  # the reader's word for the whole input
    return ApiProblem(422, "task_validation", str(exc), field=field)


class Service:
    """The state behind the endpoints: the Oracle, the store, jobs and batches."""

    def __init__(self, config: OracleConfig, settings: ServeSettings) -> None:
        from oracle.escalation._location import resolve_store_path
        from oracle.escalation.store import EscalationStore
        from oracle._oracle import Oracle

        self.settings = settings
        self.config = server_config(config, settings)
        self.store_path = resolve_store_path(settings.store_path, self.config)  # the CLI's rule
        self.store = EscalationStore(self.store_path) if self.config.escalation.enabled else None
        # With a store the service learns from the routing history (a snapshot frozen at start-up).
        self.oracle = Oracle(self.config, store=self.store, learn_history=self.store is not None)
        for kind in self.config.routing.enabled_evaluators:
            # Build each evaluator now: its first import (providers, sandbox) takes a second or more,
            # which would otherwise stall the event loop, and every request, on the first evaluation.
            self.oracle.evaluator(kind)
        self._tmp = None if settings.work_dir else tempfile.TemporaryDirectory(prefix="oracle-serve-")
        work_dir = Path(settings.work_dir or self._tmp.name)  # type: ignore[union-attr]
        self.jobs = JobRegistry(max_running=settings.max_jobs, keep=settings.keep_jobs)
        self.batches = BatchRegistry(work_dir, max_running=settings.max_batches, keep=settings.keep_jobs)
        self.guard: Guard | None = None

    async def aclose(self) -> None:
        await self.jobs.aclose()
        await self.batches.wait()
        await self.oracle.aclose()
        if self.store is not None:
            self.store.close()
        if self._tmp is not None:
            self._tmp.cleanup()

    # -- input ---------------------------------------------------------------------------------

    def task(self, body: bytes) -> TaskInput:
        """One task from a request body, read like a task file; in_process refused unless allowed."""
        from oracle.tasks.files import decode_json, parse_task

        limits, source = self.config.limits, "request body"
        try:
            if not body.strip():
                raise TaskValidationError("empty body: send one task as JSON, {\"task\": ..., \"trajectories\": [...]}",
                                          field="(body)")
            if len(body) > limits.max_file_bytes:
                raise TaskValidationError(f"body is {len(body)} bytes; at most {limits.max_file_bytes} "
                                          "(limits.max_file_bytes)", field="(body)")
            item = parse_task(decode_json(body, source=source, line=None), source=source, limits=limits)
        except TaskValidationError as exc:
            raise invalid_task(exc) from None
        self.check_execution(item, where="task.execution")
        return item

    def check_execution(self, item: TaskInput, *, where: str) -> None:
        if item.task.execution == "in_process" and not self.settings.allow_in_process:
            raise ApiProblem(422, "task_validation", f"{where}: 'in_process' runs the tests inside the candidate's "
                             "process; this server does not accept it (start it with --allow-in-process)",
                             field=where)

    def batch_lines(self, body: bytes) -> int:
        """Non-blank lines of an uploaded JSONL batch; a line asking for in_process refuses the batch.

        Other bad lines are left to the batch, which gives each its own row naming the problem."""
        from oracle.tasks.files import decode_json

        total = 0
        for number, raw in enumerate(body.split(b"\n"), start=1):
            if not raw.strip():
                continue
            total += 1
            try:
                data = decode_json(raw, source="batch", line=number)
            except TaskValidationError:
                continue
            task = data.get("task") if isinstance(data, dict) else None
            if isinstance(task, dict) and task.get("execution") == "in_process" and not self.settings.allow_in_process:
                raise ApiProblem(422, "task_validation", f"line {number}: task.execution: 'in_process' is not "
                                 "accepted by this server (start it with --allow-in-process)",
                                 field=f"line {number}: task.execution")
        if total == 0:
            raise ApiProblem(422, "task_validation", "the batch holds no tasks (one JSON task per line)",
                             field="(body)")
        return total

    # -- work ----------------------------------------------------------------------------------

    def route(self, item: TaskInput) -> dict[str, Any]:
        try:
            return route_adapter().dump_python(self.oracle.route(item), mode="json")
        except TaskValidationError as exc:  # a rubric that cannot be used
            raise invalid_task(exc) from None

    def budget(self, max_calls: int | None, max_cost_usd: float | None) -> Any:
        """The budget of one request: what it asks for, within the server's ceiling (``--max-calls``,
        ``--max-cost-usd``); None when neither sets one. Asking for more than the ceiling, or a cost
        budget over a model with no known price, is a 422 naming the parameter."""
        from oracle.errors import ConfigError
        from oracle.providers.budget import Budget, check_prices

        limits: dict[str, Any] = {}
        for name, asked, ceiling in (("max_calls", max_calls, self.settings.max_calls),
                                     ("max_cost_usd", max_cost_usd, self.settings.max_cost_usd)):
            if asked is not None and ceiling is not None and asked > ceiling:
                raise ApiProblem(422, "request_validation", f"{name}: {asked:g} is over this server's ceiling of "
                                 f"{ceiling:g} (oracle serve --{name.replace('_', '-')})", field=name)
            limits[name] = asked if asked is not None else ceiling
        if limits["max_calls"] is None and limits["max_cost_usd"] is None:
            return None
        try:
            budget = Budget(**limits)
            check_prices(self.config, budget)
        except ConfigError as exc:
            raise ApiProblem(422, "request_validation", str(exc),
                             field="max_cost_usd" if "price" in str(exc) else str(exc).split(":", 1)[0]) from None
        return budget

    def submit(self, item: TaskInput, budget: Any = None) -> Any:
        async def work() -> dict[str, Any]:
            res = await self.oracle.aevaluate(item, budget=budget)
            return res.model_dump(mode="json")

        try:
            return self.jobs.submit(work)
        except Full as exc:
            raise ApiProblem(503, "busy", str(exc), headers={"Retry-After": "1"}) from None

    def run_batch(self, batch: Batch, budget: Any = None) -> dict[str, Any]:
        from oracle.batch import run_batch

        store = self.store_path if self.store is not None else None
        report = run_batch(batch.input_path, batch.output_path, config=self.config, concurrency=4,
                           store_path=store, progress_tty=False, budget=budget)
        if report.stopped:  # the model endpoint is down: the batch failed, its rows so far are kept
            from oracle.errors import EndpointUnreachable

            raise EndpointUnreachable(report.stopped)
        return {"total": report.total, "computed": report.computed, "elapsed_s": round(report.elapsed_s, 3),
                **({"budget": report.budget} if report.budget is not None else {}), **report.summary}

    def stored(self) -> Any:
        """The escalation store, or 404 when evaluations file none."""
        if self.store is None:
            raise ApiProblem(404, "not_found", "escalation is disabled in this server's config")
        return self.store


def job_info(job: Any) -> dict[str, Any]:
    return {"job_id": job.id, "state": job.state, "created_at": job.created_at, "finished_at": job.finished_at,
            "result": job.result, "error": job.error}


def batch_info(batch: Batch) -> dict[str, Any]:
    return {"batch_id": batch.id, "state": batch.state, "total": batch.total, "rows": batch.rows_written(),
            "created_at": batch.created_at, "finished_at": batch.finished_at, "summary": batch.summary,
            "error": batch.error}


def summary(entry: Any) -> dict[str, Any]:
    return EscalationSummary(id=entry.id, task_id=entry.task_id, state=entry.state, reason=entry.request.reason,
                             blocking=entry.request.blocking, question=entry.request.question,
                             options=entry.request.options).model_dump(mode="json")


def find_batch(service: Service, batch_id: str) -> Batch:
    found = service.batches.get(batch_id)
    if found is None:
        raise ApiProblem(404, "not_found", "no such batch")
    return found


def complete_lines(path: Path) -> bytes:
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return b""
    return data[:data.rfind(b"\n") + 1]


async def stored_call(fn: Any, *args: Any, **kwargs: Any) -> Any:
    """A store call in a worker thread, its refusals turned into API errors."""
    try:
        return await asyncio.to_thread(fn, *args, **kwargs)
    except EscalationNotFound as exc:
        raise ApiProblem(404, "not_found", str(exc)) from None
    except AlreadyAnswered as exc:
        raise ApiProblem(409, "already_answered", f"{exc} (send replace: true to change it)") from None
    except EscalationStoreError as exc:
        raise ApiProblem(500, "store", str(exc)) from None
    except ValueError as exc:  # an answer that does not fit the request (a choice not offered)
        raise ApiProblem(422, "answer_invalid", str(exc), field="choice") from None
