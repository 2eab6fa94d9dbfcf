"""The viewer's HTTP endpoints (FastAPI): pages, the list rows page by page, and answering a request.

Answering is the only write. It goes through the ``Guard`` of ``oracle serve`` (the bearer token,
compared in constant time, when bound beyond loopback; body size and time limits always), and
through ``EscalationStore.answer``: the first answer wins, ``replace`` overrides, as
``oracle escalations answer [--replace]``. It takes JSON only and refuses a cross-site ``Origin``,
so a web page elsewhere cannot post an answer through the reviewer's browser.
"""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI, Query, Request
from fastapi.responses import HTMLResponse, JSONResponse, Response
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from oracle.serve.guard import Guard
from oracle.view import pages, shell
from oracle.view.catalog import Catalog

MAX_PAGE = 5000
CSP = ("default-src 'none'; script-src 'self'; style-src 'unsafe-inline'; img-src data:; connect-src 'self'; "
       "form-action 'none'; frame-ancestors 'none'; base-uri 'none'")


class AnswerBody(BaseModel):
    """An answer from the page: the fields of ``oracle escalations answer``."""

    model_config = ConfigDict(extra="forbid")

    text: str = Field(default="", max_length=100_000)
    choice: str | None = None
    answered_by: str | None = None
    replace: bool = False


def _html(body: str, status: int = 200) -> HTMLResponse:
    return HTMLResponse(body, status_code=status, headers={"content-security-policy": CSP,
                                                           "x-content-type-options": "nosniff"})


def _error(status: int, error: str, message: str) -> JSONResponse:
    return JSONResponse({"error": error, "message": message}, status_code=status)


def create_app(catalog: Catalog, *, token: str | None) -> Any:
    """The ASGI app: FastAPI for reads; answers through ``Guard`` (``token`` None: loopback, none asked)."""
    app = FastAPI(title="oracle view", docs_url=None, redoc_url=None, openapi_url=None)
    link = pages.served_link
    frame_nav = pages.nav(catalog, link, "/")
    answerable = catalog.store_path is not None

    def frame(title: str, body: str | None) -> HTMLResponse:
        if body is None:
            return _html(shell.page("not found", "<p class='error'>No such page.</p>", mode="served", nav=frame_nav),
                         404)
        return _html(shell.page(title, body, mode="served", nav=frame_nav))

    @app.get("/", response_class=HTMLResponse)
    def index() -> HTMLResponse:
        return frame("oracle view", pages.list_page_body())

    @app.get("/static/view.js")
    def script() -> Response:
        return Response(shell.JS, media_type="text/javascript", headers={"cache-control": "no-cache"})

    @app.get("/api/rows")
    def list_rows(offset: int = Query(0, ge=0), limit: int = Query(2000, ge=1, le=MAX_PAGE)) -> JSONResponse:
        # built per page (microseconds a row), so an answer given meanwhile shows in its row's state
        page = [e.list_row() for e in catalog.entries[offset:offset + limit]]
        return JSONResponse({"total": len(catalog.entries), "offset": offset, "rows": page})

    @app.get("/task/{key}", response_class=HTMLResponse)
    def task(key: str) -> HTMLResponse:
        return frame(key, pages.task_body(catalog, key, answerable=answerable))

    @app.get("/compare/{key}", response_class=HTMLResponse)
    def compare(key: str) -> HTMLResponse:
        return frame(key, pages.compare_body(catalog, key, link))

    @app.get("/item/{key:path}", response_class=HTMLResponse)
    def item(key: str) -> HTMLResponse:
        return frame(key, pages.item_body(catalog, key, link))

    @app.post("/api/escalations/{esc_id}/answer")
    async def answer(esc_id: str, request: Request) -> JSONResponse:
        return await _answer(catalog, esc_id, request)

    guarded = Guard(app, token=token, max_body_bytes=1024 * 1024, timeout_s=60.0, max_concurrency=8)

    async def dispatch(scope: Any, receive: Any, send: Any) -> None:
        """Writes go through the guard; reads (pages and rows) straight to the app."""
        if scope["type"] == "http" and scope.get("method") not in ("GET", "HEAD"):
            await guarded(scope, receive, send)
        else:
            await app(scope, receive, send)

    return dispatch


async def _answer(catalog: Catalog, esc_id: str, request: Request) -> JSONResponse:
    from oracle.errors import AlreadyAnswered, EscalationNotFound, EscalationStoreError
    from oracle.escalation.human import HumanAnswer
    from oracle.escalation.store import EscalationStore
    from oracle.view.sources import stored_record

    if catalog.store_path is None:
        return _error(404, "no_store", "no escalation store was given (oracle view --store PATH)")
    origin = request.headers.get("origin")
    if origin is not None and origin != f"{request.url.scheme}://{request.headers.get('host')}":
        return _error(403, "cross_origin", f"an answer from {origin} is refused: post from the viewer's own page")
    if request.headers.get("content-type", "").split(";")[0].strip() != "application/json":
        return _error(415, "json_only", "send the answer as application/json")
    try:
        body = AnswerBody.model_validate_json(await request.body())
        given = HumanAnswer(text=body.text, choice=body.choice or None, answered_by=body.answered_by or None)
    except ValidationError as exc:
        err = exc.errors()[0]
        return _error(422, "bad_answer", f"answer {'.'.join(str(p) for p in err['loc'])}: {err['msg']}")
    try:
        with EscalationStore(catalog.store_path) as store:
            stored = store.answer(esc_id, given, replace=body.replace)
    except EscalationNotFound as exc:
        return _error(404, "not_found", str(exc.args[0]))
    except AlreadyAnswered as exc:
        return _error(409, "already_answered", str(exc.args[0]))
    except ValueError as exc:
        return _error(422, "bad_answer", str(exc))
    except EscalationStoreError as exc:
        return _error(500, "store", str(exc))
    record = stored_record(stored)
    for entry in catalog.entries:
        if entry.stored and entry.stored.get("id") == stored.id:
            entry.stored = record
    return JSONResponse(record)
