"""The ASGI layer in front of the API: bearer token, concurrency, body size and time limits.

It wraps the whole application (outside FastAPI's own error handling), so no request reaches an
endpoint before it has passed, in this order:

1. the bearer token (401), compared with ``hmac.compare_digest`` so the time taken does not tell
   how much of a guess was right; checked before any body byte is read;
2. the concurrency limit (503 with ``Retry-After``): a full server answers at once instead of queuing;
3. the body size (413): a declared ``Content-Length`` past the limit is refused unread, and a body
   without one is counted while it arrives and refused as soon as it passes the limit, so at most
   the limit plus one chunk is ever held;
4. the time limit (504) around the rest of the request, and a shorter one (408) on receiving the
   body: a body trickled byte by byte cannot hold a slot for the whole request timeout.

The open paths (``/v1/health``) skip 1 to 4 so that a monitor can see a busy server is alive, and
in exchange read no request body at all (a body sent to them is never taken in; the connection is
closed after the answer) and have their own small concurrency limit, so a flood of probes cannot
take the API's slots, nor the API's load the probes'. Every refusal is the API's error shape:
``{"error": ..., "message": ...}``.
"""

from __future__ import annotations

import asyncio
import hmac
import json
from typing import Any, Awaitable, Callable, MutableMapping

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

OPEN_PATHS = frozenset({"/v1/health"})
"""Paths served without a token: they read no body and have their own concurrency limit."""
OPEN_TIMEOUT_S = 10.0


class Guard:
    """Wraps ``app``; see the module docstring. ``token`` None: no token is asked for."""

    def __init__(self, app: ASGIApp, *, token: str | None, max_body_bytes: int, timeout_s: float,
                 max_concurrency: int, max_open_concurrency: int = 4, body_timeout_s: float = 30.0) -> None:
        self.app = app
        self._token = token.encode() if token is not None else None
        self.max_body_bytes = max_body_bytes
        self.timeout_s = timeout_s
        self.max_concurrency = max_concurrency
        self.max_open_concurrency = max_open_concurrency
        self.body_timeout_s = body_timeout_s
        self.in_flight = 0
        self.open_in_flight = 0

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        if scope.get("path") in OPEN_PATHS:
            await self._run_open(scope, send)
            return
        if self._token is not None and not self._authorized(scope):
            await _refuse(send, 401, "unauthorized", "a valid 'Authorization: Bearer <token>' header is required",
                          headers=[(b"www-authenticate", b'Bearer realm="oracle"')])
            return
        if self.in_flight >= self.max_concurrency:
            await _refuse(send, 503, "busy", f"{self.max_concurrency} requests already in flight; retry shortly",
                          headers=[(b"retry-after", b"1")])
            return
        self.in_flight += 1
        try:
            await self._run(scope, receive, send)
        finally:
            self.in_flight -= 1

    async def _run_open(self, scope: Scope, send: Send) -> None:
        """An open path: no body is read (the app sees an empty one), its own limit, a short timeout."""
        if self.open_in_flight >= self.max_open_concurrency:
            await _refuse(send, 503, "busy", f"{self.max_open_concurrency} health requests already in flight",
                          headers=[(b"retry-after", b"1"), (b"connection", b"close")])
            return
        close = _declares_body(scope)
        started = False

        async def no_body() -> Message:
            nonlocal started
            if not started:
                started = True
                return {"type": "http.request", "body": b"", "more_body": False}
            await asyncio.sleep(OPEN_TIMEOUT_S)  # never read the socket: wait out the timeout
            return {"type": "http.disconnect"}

        async def closing_send(message: Message) -> None:
            if close and message["type"] == "http.response.start":  # the unread body must not be parsed
                message = {**message, "headers": [*message.get("headers", []), (b"connection", b"close")]}
            await send(message)

        self.open_in_flight += 1
        try:
            async with asyncio.timeout(OPEN_TIMEOUT_S):
                await self.app(scope, no_body, closing_send)
        except TimeoutError:
            pass
        finally:
            self.open_in_flight -= 1

    def _authorized(self, scope: Scope) -> bool:
        assert self._token is not None
        for name, value in scope.get("headers", []):
            if name == b"authorization":
                scheme, _, given = bytes(value).partition(b" ")
                return scheme.lower() == b"bearer" and hmac.compare_digest(given.strip(), self._token)
        return False

    async def _run(self, scope: Scope, receive: Receive, send: Send) -> None:
        started = False

        async def tracking_send(message: Message) -> None:
            nonlocal started
            started = True
            await send(message)

        try:
            async with asyncio.timeout(self.timeout_s):
                try:
                    async with asyncio.timeout(self.body_timeout_s):
                        body = await self._read_body(scope, receive)
                except TimeoutError:
                    await _refuse(send, 408, "body_timeout", f"the request body did not arrive within "
                                                             f"{self.body_timeout_s:g} s (oracle serve --body-timeout)",
                                  headers=[(b"connection", b"close")])
                    return
                if body is None:
                    await _refuse(send, 413, "too_large", f"request body over {self.max_body_bytes} bytes "
                                                          "(oracle serve --max-body-mib)")
                    return
                await self.app(scope, _replay(body, receive), tracking_send)
        except TimeoutError:
            if not started:
                await _refuse(send, 504, "timeout", f"request took longer than {self.timeout_s:g} s "
                                                    "(oracle serve --request-timeout)")

    async def _read_body(self, scope: Scope, receive: Receive) -> bytes | None:
        """The whole body, or None as soon as it is known to be past the limit."""
        for name, value in scope.get("headers", []):
            if name == b"content-length":
                try:
                    if int(value) > self.max_body_bytes:
                        return None
                except ValueError:
                    pass  # the server rejects a malformed length itself
        chunks: list[bytes] = []
        size = 0
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                break
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > self.max_body_bytes:
                return None
            chunks.append(chunk)
            if not message.get("more_body", False):
                break
        return b"".join(chunks)


def _declares_body(scope: Scope) -> bool:
    for name, value in scope.get("headers", []):
        if name == b"transfer-encoding" or (name == b"content-length" and bytes(value).strip() not in (b"0", b"")):
            return True
    return False


def _replay(body: bytes, receive: Receive) -> Receive:
    """A ``receive`` that hands the app the body already read, then waits on the real one."""
    sent = False

    async def replay() -> Message:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return replay


async def _refuse(send: Send, status: int, error: str, message: str,
                  headers: list[tuple[bytes, bytes]] | None = None) -> None:
    payload = json.dumps({"error": error, "message": message}).encode()
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"application/json"),
                            (b"content-length", str(len(payload)).encode()), *(headers or [])]})
    await send({"type": "http.response.body", "body": payload})
