"""The HTTP JSON API over the library: route, evaluate, batches, escalations, resume.

Tasks arrive as the bytes of one task file (``{"task": ..., "trajectories": [...]}``) and are read
by the same code and under the same ``limits`` as a task file given to the CLI: duplicate keys,
depth, size and huge integers are refused the same way, as 422 naming the field. Nothing here runs
code: evaluations go through the ``Oracle``, whose verifier runs candidates in its sandbox under
the config's opt-in rules; a task asking for ``execution: in_process`` is refused unless the server
was started with ``--allow-in-process`` (and without it the verifier's own opt-in is forced off).
Batch input is uploaded, never named by path: a caller cannot make the server read its files.
"""

from __future__ import annotations

import asyncio
import functools
from contextlib import asynccontextmanager
from typing import Any, AsyncIterator, Callable, Literal

from fastapi import FastAPI, Query, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from starlette.exceptions import HTTPException as StarletteHTTPException

from oracle._internal.version import __version__
from oracle.config.model import OracleConfig
from oracle.errors import EscalationNotFound, NotAnswered, TaskValidationError
from oracle.serve import openapi_doc
from oracle.serve.api_models import (AnswerRequest, ApiError, BatchInfo, EscalationSummary, Health, JobInfo,
                                     VersionInfo)
from oracle.serve.guard import Guard
from oracle.serve.jobs import Full
from oracle.serve.service import (ApiProblem, Service, batch_info, complete_lines, find_batch, invalid_task,
                                  job_info, stored_call, summary)
from oracle.serve.settings import ServeSettings
from oracle.escalation.store import StoredEscalation
from oracle.results.result import OracleResult
from oracle.routing.route import Route

JSONL = "application/x-ndjson"


def _error(status: int, error: str, message: str, *, field: str | None = None, job_id: str | None = None,
           headers: dict[str, str] | None = None) -> JSONResponse:
    body = ApiError(error=error, message=message, field=field, job_id=job_id)
    return JSONResponse(body.model_dump(mode="json", exclude_none=True), status_code=status, headers=headers)


_MAX_CALLS = ("this request's budget in model requests (retries count, cache hits do not): what it cannot admit "
              "is not sent and the result is skipped, reason budget; at most the server's --max-calls")
_MAX_COST = ("this request's budget in USD (estimated from the price table before each model request, charged "
             "at the actual cost); at most the server's --max-cost-usd; a model with no known price: 422")

_TASK_BODY = {"requestBody": {"required": True, "content": {"application/json": {
    "schema": {"$ref": "#/components/schemas/TaskInput"}}}}}
_BATCH_BODY = {"requestBody": {"required": True, "content": {JSONL: {
    "schema": {"type": "string", "description": "one JSON task per line"}}}}}
_ERRORS: dict[int | str, dict[str, Any]] = {code: {"model": ApiError} for code in (401, 413, 422, 503, 504)}


def create_app(config: OracleConfig, settings: ServeSettings, *,
               on_ready: Callable[[], None] | None = None) -> Guard:
    """The ASGI application: the API behind its ``Guard``. ``on_ready`` runs once the service
    (Oracle, store, work directory) is up, before the first request is served."""
    service: Service | None = None

    @asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        nonlocal service
        service = Service(config, settings)
        service.guard = guard
        try:
            async with service.oracle:  # one provider pool for the server's life
                if on_ready is not None:
                    on_ready()
                yield
        finally:
            await service.aclose()

    def svc() -> Service:
        assert service is not None, "the lifespan starts the service"
        return service

    app = FastAPI(title="oracle-router", version=__version__, lifespan=lifespan, docs_url=None,
                  redoc_url=None, separate_input_output_schemas=False,
                  description="Route AI outputs to the evaluator that fits them and "
                  "evaluate them. Errors are ApiError objects; task errors are 422 naming the field.")

    @app.exception_handler(ApiProblem)
    async def _problem(_: Request, exc: ApiProblem) -> JSONResponse:
        return _error(exc.status, exc.error, exc.message, field=exc.field, headers=exc.headers)

    @app.exception_handler(RequestValidationError)
    async def _request_invalid(_: Request, exc: RequestValidationError) -> JSONResponse:
        first = exc.errors()[0] if exc.errors() else {}
        loc = [str(p) for p in first.get("loc", ()) if p not in ("body", "query", "path")]
        return _error(422, "request_validation", "; ".join(
            f"{'.'.join(str(p) for p in e.get('loc', ()))}: {e.get('msg')}" for e in exc.errors()[:10]),
            field=".".join(loc) or None)

    @app.exception_handler(StarletteHTTPException)
    async def _http(_: Request, exc: StarletteHTTPException) -> JSONResponse:
        if exc.status_code == 400:  # a body FastAPI could not read (not UTF-8...): bad input, like a task's
            return _error(422, "request_validation", f"request body: {exc.detail}", field="(body)")
        codes = {404: "not_found", 405: "method_not_allowed"}
        return _error(exc.status_code, codes.get(exc.status_code, "http_error"), str(exc.detail),
                      headers=getattr(exc, "headers", None))

    @app.exception_handler(Exception)
    async def _internal(_: Request, exc: Exception) -> JSONResponse:
        return _error(500, "internal", f"internal error: {type(exc).__name__} (a bug: please report it)")

    @app.get("/v1/health", response_model=Health, tags=["meta"])
    async def health() -> Health:
        s = svc()
        return Health(requests_in_flight=s.guard.in_flight if s.guard else 0, jobs_running=s.jobs.running,
                      batches_running=s.batches.running)

    @app.get("/v1/version", response_model=VersionInfo, tags=["meta"])
    async def version() -> VersionInfo:
        return VersionInfo(version=__version__, config_hash=svc().config.hash())

    @app.post("/v1/route", tags=["evaluate"], openapi_extra=_TASK_BODY, responses={
        200: {"description": "the route and its trace", "model": Route}, **_ERRORS})
    async def route(request: Request) -> JSONResponse:
        """Which evaluator the task goes to, with the full trace; runs nothing."""
        s = svc()
        item = await asyncio.to_thread(s.task, await request.body())
        return JSONResponse(await asyncio.to_thread(s.route, item))

    @app.post("/v1/evaluate", tags=["evaluate"], openapi_extra=_TASK_BODY, response_model=JobInfo,
              responses={200: {"model": JobInfo, "description": "wait=true: the job, done or failed"},
                         202: {"model": JobInfo, "description": "wait=false: the job, running"}, **_ERRORS})
    async def evaluate(request: Request, wait: bool = Query(
            True, description="wait for the result (up to the request timeout; then 504 naming the job), "
                              "or return the job at once to poll"),
            max_calls: int | None = Query(None, ge=0, description=_MAX_CALLS),
            max_cost_usd: float | None = Query(None, ge=0, allow_inf_nan=False, description=_MAX_COST)
            ) -> JSONResponse:
        """Route and evaluate one task."""
        s = svc()
        budget = s.budget(max_calls, max_cost_usd)
        item = await asyncio.to_thread(s.task, await request.body())
        await asyncio.to_thread(s.route, item)  # bad input (an unknown rubric) is 422 now, not a failed job
        job = s.submit(item, budget)
        if not wait:
            return JSONResponse(job_info(job), status_code=202)
        budget = max(settings.request_timeout_s - 1.0, settings.request_timeout_s / 2)
        done, _ = await asyncio.wait({job.task}, timeout=budget)
        if not done:
            return _error(504, "timeout", f"still evaluating after {budget:g} s; poll /v1/jobs/{job.id}",
                          job_id=job.id)
        return JSONResponse(job_info(job))

    @app.get("/v1/jobs/{job_id}", response_model=JobInfo, tags=["evaluate"],
             responses={404: {"model": ApiError}, **_ERRORS})
    async def job(job_id: str) -> JSONResponse:
        found = svc().jobs.get(job_id)
        if found is None:
            raise ApiProblem(404, "not_found", "no such job (finished jobs are kept for a while, then forgotten)")
        return JSONResponse(job_info(found))

    @app.post("/v1/batches", status_code=202, response_model=BatchInfo, tags=["batch"], openapi_extra=_BATCH_BODY,
              responses=_ERRORS)
    async def submit_batch(request: Request,
                           max_calls: int | None = Query(None, ge=0, description=_MAX_CALLS),
                           max_cost_usd: float | None = Query(None, ge=0, allow_inf_nan=False, description=_MAX_COST)
                           ) -> JSONResponse:
        """Start a batch over an uploaded JSONL file; every non-blank line gets one row (``skipped``,
        reason ``budget``, for the lines its budget did not reach)."""
        s = svc()
        budget = s.budget(max_calls, max_cost_usd)
        body = await request.body()
        total = await asyncio.to_thread(s.batch_lines, body)
        try:
            batch = s.batches.submit(body, total, functools.partial(s.run_batch, budget=budget))
        except Full as exc:
            raise ApiProblem(503, "busy", str(exc), headers={"Retry-After": "5"}) from None
        return JSONResponse(batch_info(batch), status_code=202)

    @app.get("/v1/batches/{batch_id}", response_model=BatchInfo, tags=["batch"],
             responses={404: {"model": ApiError}, **_ERRORS})
    async def batch_status(batch_id: str) -> JSONResponse:
        return JSONResponse(batch_info(find_batch(svc(), batch_id)))

    @app.get("/v1/batches/{batch_id}/results", tags=["batch"], responses={
        200: {"description": "the rows written so far, one JSON object per line",
              "content": {JSONL: {"schema": {"type": "string"}}}}, 404: {"model": ApiError}, **_ERRORS})
    async def batch_results(batch_id: str) -> Response:
        batch = find_batch(svc(), batch_id)
        data = await asyncio.to_thread(complete_lines, batch.output_path)
        return Response(data, media_type=JSONL, headers={"X-Batch-State": batch.state})

    @app.get("/v1/escalations", response_model=list[EscalationSummary], tags=["escalations"],
             responses={404: {"model": ApiError}, **_ERRORS})
    async def escalations(state: Literal["pending", "answered", "resolved"] | None = None) -> JSONResponse:
        store = svc().stored()
        entries = await asyncio.to_thread(store.list, state)
        return JSONResponse([summary(e) for e in entries])

    @app.get("/v1/escalations/{esc_id}", tags=["escalations"], responses={
        200: {"description": "the stored request: question, evidence, task, first result, answer, final result",
              "model": StoredEscalation},
        404: {"model": ApiError}, **_ERRORS})
    async def escalation(esc_id: str) -> JSONResponse:
        store = svc().stored()
        entry = await stored_call(store.get, esc_id)
        return JSONResponse(entry.model_dump(mode="json"))

    @app.post("/v1/escalations/{esc_id}/answer", response_model=EscalationSummary, tags=["escalations"],
              responses={404: {"model": ApiError}, 409: {"model": ApiError}, **_ERRORS})
    async def answer(esc_id: str, body: AnswerRequest) -> JSONResponse:
        """Answer a request; the first answer stands unless ``replace`` is true."""
        from oracle.escalation.human import HumanAnswer

        store = svc().stored()
        given = HumanAnswer(text=body.text, choice=body.choice, answered_by=body.answered_by)
        entry = await stored_call(store.answer, esc_id, given, replace=body.replace)
        return JSONResponse(summary(entry))

    @app.post("/v1/escalations/{esc_id}/resume", tags=["escalations"], responses={
        200: {"description": "the final result with the answer applied", "model": OracleResult},
        404: {"model": ApiError}, 409: {"model": ApiError}, **_ERRORS})
    async def resume(esc_id: str) -> JSONResponse:
        """Apply a stored answer: re-route, re-evaluate, and store the final result."""
        from oracle.escalation.resume import aresume_stored

        s = svc()
        store = s.stored()
        try:
            final = await aresume_stored(s.oracle.evaluate_once, store, esc_id)
        except EscalationNotFound as exc:
            raise ApiProblem(404, "not_found", str(exc)) from None
        except NotAnswered as exc:
            raise ApiProblem(409, "not_answered", str(exc)) from None
        except TaskValidationError as exc:
            raise invalid_task(exc) from None
        except ValueError as exc:  # an answer that does not fit the task
            raise ApiProblem(409, "not_answered", str(exc)) from None
        return JSONResponse(final.model_dump(mode="json"))

    app.openapi = lambda: openapi_doc.build(app)  # type: ignore[method-assign]
    guard = Guard(app, token=settings.token.get_secret_value() if settings.token else None,
                  max_body_bytes=settings.max_body_bytes, timeout_s=settings.request_timeout_s,
                  max_concurrency=settings.max_concurrency, max_open_concurrency=settings.max_open_concurrency,
                  body_timeout_s=settings.body_timeout_s)
    guard.fastapi = app  # type: ignore[attr-defined]
    return guard
