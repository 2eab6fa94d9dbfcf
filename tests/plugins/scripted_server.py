"""A scripted HTTP server speaking the real model wire protocols on 127.0.0.1, for tests and benchmarks.

It is a real socket server (asyncio, HTTP/1.1 with keep-alive) in a background thread, so clients
under test go through httpx, TCP and JSON exactly as in production. It answers:

    POST /v1/chat/completions   OpenAI chat          POST /v1/messages    Anthropic Messages
    POST /v1/systemone          System One decisions POST /v1/decisions   Decisions format
    GET  /v1/models             model list

Fixture ``scripted_server`` (function scope) yields a started ``ScriptedServer``::

    def test_x(scripted_server):
        settings = scripted_server.provider_settings(kind="openai", max_retries=2)  # fast backoff
        scripted_server.push(status_reply(429, retry_after=0.05), chat_reply("hello"))
        reply = make_chat_client(settings).complete(req)
        assert len(scripted_server.requests) == 2          # RecordedRequest: method, path, headers, json

Scripting: ``push(*items)`` queues replies, served in order, one per request; an item is a
``Reply`` or a function ``RecordedRequest -> Reply``. When the queue is empty ``handler`` answers
(default ``auto_reply``: a valid answer for whichever protocol the path names: chat text "ok" with
logprobs when asked, every decision question answered with a uniform distribution).
``set_handler(fn)`` replaces it. ``requests`` records everything received, so a test can assert
that no request was sent (``scripted_server.requests == []``).

Replies and faults (module functions): ``chat_reply(text, logprobs=..., model=...)``,
``anthropic_reply(text)``, ``decision_handler(probabilities=, refuse=, omit=, confidence=)`` (builds
a correct System One or Decisions reply from the questions in the request; ``omit`` leaves an
answer out, ``refuse`` answers with a refusal), ``status_reply(429, retry_after=1)`` (any status),
``Reply(fault="reset")`` (TCP reset, no response), ``Reply(delay_s=5, ...)`` (slow),
``truncated_reply(obj)`` (valid HTTP, JSON cut in half), ``garbage_reply()`` (200 with an HTML body).

Outside pytest: ``with ScriptedServer(latency_s=0.05) as server: ...`` or run it as a process,
``python -m tests.plugins.scripted_server --port 0 --latency-ms 50``, which prints
``READY <base_url>`` and serves ``auto_reply`` until killed (the throughput benchmark does this so
the server does not share the client's GIL).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import socket
import struct
import threading
import time
import traceback
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Literal

import pytest

_REASONS = {200: "OK", 400: "Bad Request", 404: "Not Found", 408: "Request Timeout", 422: "Unprocessable",
            429: "Too Many Requests", 500: "Internal Server Error", 502: "Bad Gateway",
            503: "Service Unavailable", 504: "Gateway Timeout"}


@dataclass(frozen=True)
class RecordedRequest:
    method: str
    path: str
    headers: dict[str, str]
    body: bytes

    @property
    def json(self) -> Any:
        try:
            return json.loads(self.body) if self.body else None
        except ValueError:
            return None


@dataclass(frozen=True)
class Reply:
    """One scripted HTTP response, or a fault instead of one."""

    status: int = 200
    json: Any = None
    body: bytes | None = None
    """Raw body; overrides ``json``."""
    headers: dict[str, str] = field(default_factory=dict)
    delay_s: float = 0.0
    """Extra wait before answering (added to the server's fixed latency)."""
    fault: Literal["reset", "endless"] | None = None
    """``reset``: abort the TCP connection (RST) instead of answering. ``endless``: a 200 whose
    chunked body (JSON whitespace, then ``payload``'s bytes repeated) never ends until the client
    hangs up or ``endless_limit_bytes`` is reached: a server that never stops talking."""
    endless_limit_bytes: int = 1 << 30

    def payload(self) -> bytes:
        if self.body is not None:
            return self.body
        return json.dumps(self.json if self.json is not None else {}).encode()


Handler = Callable[[RecordedRequest], Reply]


# ---- reply builders -------------------------------------------------------------------------------

def chat_reply(text: str = "ok", *, model: str = "scripted-model",
               logprobs: list[tuple[str, float, dict[str, float]]] | None = None,
               prompt_tokens: int = 10, completion_tokens: int | None = None,
               finish_reason: str = "stop", request_id: str = "chatcmpl-scripted") -> Reply:
    """An OpenAI chat completion; ``logprobs`` is a list of (token, logprob, {alt: logprob})."""
    choice: dict[str, Any] = {"index": 0, "message": {"role": "assistant", "content": text},
                              "finish_reason": finish_reason, "logprobs": None}
    if logprobs is not None:
        choice["logprobs"] = {"content": [
            {"token": t, "logprob": lp, "bytes": None,
             "top_logprobs": [{"token": a, "logprob": alp, "bytes": None} for a, alp in top.items()]}
            for t, lp, top in logprobs]}
    n_out = completion_tokens if completion_tokens is not None else max(1, len(text.split()))
    return Reply(json={"id": request_id, "object": "chat.completion", "created": int(time.time()),
                       "model": model, "choices": [choice],
                       "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": n_out,
                                 "total_tokens": prompt_tokens + n_out}})


def anthropic_reply(text: str = "ok", *, model: str = "scripted-claude", input_tokens: int = 10,
                    output_tokens: int = 3, stop_reason: str = "end_turn") -> Reply:
    return Reply(json={"id": "msg_scripted", "type": "message", "role": "assistant", "model": model,
                       "content": [{"type": "text", "text": text}], "stop_reason": stop_reason,
                       "usage": {"input_tokens": input_tokens, "output_tokens": output_tokens}})


def status_reply(status: int, *, retry_after: float | str | None = None, message: str = "scripted") -> Reply:
    headers = {} if retry_after is None else {"retry-after": str(retry_after)}
    return Reply(status=status, json={"error": {"message": message, "code": status}}, headers=headers)


def truncated_reply(obj: Any | None = None) -> Reply:
    """A 200 whose JSON body is cut in half (Content-Length matches the cut body)."""
    text = json.dumps(obj if obj is not None else chat_reply("truncated").json).encode()
    return Reply(body=text[: len(text) // 2], headers={"content-type": "application/json"})


def garbage_reply() -> Reply:
    return Reply(body=b"<html><body>502 upstream hiccup</body></html>", headers={"content-type": "text/html"})


def decision_handler(*, probabilities: dict[str, dict[str, float] | float] | None = None,
                     refuse: dict[str, str] | None = None, omit: Iterable[str] = (),
                     confidence: float | None = 0.5, model: str = "scripted-decider") -> Handler:
    """Answer every question in a System One or Decisions request, in that request's format.

    ``probabilities``: question id -> P(yes) for a likelihood, or label -> p for a choice/score
    (score labels are level names). Unlisted questions get a uniform distribution.
    """
    probabilities, refuse, omitted = probabilities or {}, refuse or {}, set(omit)

    def handle(request: RecordedRequest) -> Reply:
        body = request.json or {}
        if request.path.endswith("/systemone"):
            answers_obj = {}
            for qid, q in (body.get("questions") or {}).items():
                if qid in omitted:
                    continue
                answers_obj[qid] = _systemone_answer(q, probabilities.get(qid), refuse.get(qid), confidence)
            payload: dict[str, Any] = {"answers": answers_obj}
        else:
            answers_list = []
            for q in body.get("questions") or []:
                if q.get("name") in omitted:
                    continue
                answers_list.append(_decisions_answer(q, probabilities.get(q.get("name")),
                                                      refuse.get(q.get("name")), confidence))
            payload = {"answers": answers_list}
        payload.update(id="dec_scripted", model=model, usage={"input_tokens": 42, "output_tokens": 0})
        return Reply(json=payload)

    return handle


def _distribution(labels: list[str], given: dict[str, float] | float | None) -> dict[str, float]:
    if isinstance(given, dict):
        return {label: float(given.get(label, 0.0)) for label in labels}
    return {label: 1.0 / len(labels) for label in labels}


def _systemone_answer(q: dict[str, Any], given: Any, refusal: str | None, confidence: float | None) -> dict:
    if refusal is not None:
        return {"type": "refusal", "refusal": refusal}
    if q["type"] == "noul":
        return {"type": "noul", "noul": float(given) if isinstance(given, (int, float)) else 0.5}
    if q["type"] == "choice":
        probs = _distribution(list(q["criteria"]), given)
        return {"type": "choice", "choice": max(probs, key=probs.__getitem__), "confidence": confidence,
                "probabilities": probs}
    levels = list(q["criteria"])
    probs = _distribution(levels, given)
    return {"type": "score", "score": sum(i * probs[lv] for i, lv in enumerate(levels)),
            "confidence": confidence, "legend": {str(i): lv for i, lv in enumerate(levels)},
            "probabilities": {str(i): probs[lv] for i, lv in enumerate(levels)}}


def _decisions_answer(q: dict[str, Any], given: Any, refusal: str | None, confidence: float | None) -> dict:
    name = q.get("name")
    if refusal is not None:
        return {"type": "refusal", "name": name, "refusal": refusal}
    if q["type"] == "predicate":
        return {"type": "predicate", "name": name,
                "probability": float(given) if isinstance(given, (int, float)) else 0.5}
    if q["type"] == "choice":
        probs = _distribution([c["value"] for c in q["choices"]], given)
        return {"type": "choice", "name": name, "choice": max(probs, key=probs.__getitem__),
                "confidence": confidence,
                "probabilities": [{"value": k, "probability": v} for k, v in probs.items()]}
    levels = [lv["label"] for lv in q["levels"]]
    probs = _distribution(levels, given)
    return {"type": "score", "name": name, "score": sum(i * probs[lv] for i, lv in enumerate(levels)),
            "confidence": confidence,
            "probabilities": [{"value": i, "label": lv, "probability": probs[lv]} for i, lv in enumerate(levels)]}


def auto_reply(request: RecordedRequest) -> Reply:
    """A valid answer for whichever protocol the path names."""
    path = request.path
    if path.endswith("/chat/completions"):
        body = request.json or {}
        logprobs = None
        if body.get("logprobs"):
            top = dict(list({"ok": -0.05, "yes": -3.2, "no": -3.9, "A": -4.4, "B": -5.0}.items())
                       [: int(body.get("top_logprobs") or 0)])
            logprobs = [("ok", -0.05, top)]
        return chat_reply("ok", model=str(body.get("model") or "scripted-model"), logprobs=logprobs,
                          completion_tokens=1)
    if path.endswith("/messages"):
        return anthropic_reply("ok", model=str((request.json or {}).get("model") or "scripted-claude"))
    if path.endswith("/systemone") or path.endswith("/decisions"):
        return decision_handler()(request)
    if path.endswith("/models"):
        return Reply(json={"object": "list", "data": [{"id": "scripted-model", "object": "model"}]})
    return status_reply(404, message=f"no route {path}")


# ---- the server -----------------------------------------------------------------------------------

class ScriptedServer:
    """Real HTTP/1.1 server on 127.0.0.1 in a background thread; see the module docstring."""

    def __init__(self, *, latency_s: float = 0.0, host: str = "127.0.0.1", port: int = 0) -> None:
        self.latency_s = latency_s
        self.host, self._port = host, port
        self.requests: list[RecordedRequest] = []
        self.errors: list[str] = []
        self.handler: Handler = auto_reply
        self._queue: list[Reply | Handler] = []
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._server: asyncio.base_events.Server | None = None
        self._conns: set[asyncio.Task] = set()

    # scripting
    def push(self, *items: Reply | Handler) -> "ScriptedServer":
        with self._lock:
            self._queue.extend(items)
        return self

    def set_handler(self, handler: Handler) -> "ScriptedServer":
        self.handler = handler
        return self

    def clear(self) -> None:
        with self._lock:
            self._queue.clear()
        self.requests.clear()

    @property
    def port(self) -> int:
        return self._port

    @property
    def base_url(self) -> str:
        """OpenAI-style base URL ending in /v1."""
        return f"http://{self.host}:{self._port}/v1"

    def provider_settings(self, kind: str = "openai", **overrides: Any):
        """ProviderSettings aimed at this server, with test-friendly fast backoff and timeouts."""
        from oracle.config.model import ProviderSettings

        values: dict[str, Any] = dict(kind=kind, base_url=self.base_url, model="scripted-model",
                                      timeout_s=2.0, max_retries=2, backoff_base_s=0.01, backoff_max_s=0.2)
        values.update(overrides)
        return ProviderSettings(**values)

    @property
    def open_connections(self) -> int:
        """TCP connections clients hold open right now (idle keep-alive ones included)."""
        return len(self._conns)

    def settle_connections(self, expected: int, timeout_s: float = 5.0) -> int:
        """Wait until ``open_connections == expected`` (a close reaches the server a moment after
        the client makes it); returns the count seen last."""
        deadline = time.monotonic() + timeout_s
        while self.open_connections != expected and time.monotonic() < deadline:
            time.sleep(0.01)
        return self.open_connections

    # lifecycle
    def start(self) -> "ScriptedServer":
        ready = threading.Event()
        self._loop = asyncio.new_event_loop()

        def run() -> None:
            asyncio.set_event_loop(self._loop)
            self._server = self._loop.run_until_complete(
                asyncio.start_server(self._serve, self.host, self._port, backlog=512))
            self._port = self._server.sockets[0].getsockname()[1]
            ready.set()
            self._loop.run_forever()

        self._thread = threading.Thread(target=run, name="scripted-server", daemon=True)
        self._thread.start()
        if not ready.wait(10):
            raise RuntimeError("scripted server did not start")
        return self

    def stop(self) -> None:
        loop = self._loop
        if loop is None or self._thread is None:
            return

        async def shutdown() -> None:
            if self._server is not None:
                self._server.close()
            for task in list(self._conns):
                task.cancel()
            await asyncio.gather(*self._conns, return_exceptions=True)

        asyncio.run_coroutine_threadsafe(shutdown(), loop).result(10)
        loop.call_soon_threadsafe(loop.stop)
        self._thread.join(10)
        loop.close()
        self._loop = self._thread = None

    def __enter__(self) -> "ScriptedServer":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # serving
    def _next(self, request: RecordedRequest) -> Reply:
        with self._lock:
            item = self._queue.pop(0) if self._queue else self.handler
        try:
            return item(request) if callable(item) else item
        except Exception:  # noqa: BLE001 - a broken test handler becomes a visible 500
            self.errors.append(traceback.format_exc())
            return status_reply(500, message="scripted handler raised; see server.errors")

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        self._conns.add(task)
        try:
            while await self._one(reader, writer):
                pass
        except (ConnectionError, asyncio.IncompleteReadError, asyncio.CancelledError):
            pass
        finally:
            self._conns.discard(task)
            if not writer.is_closing():
                writer.close()

    async def _one(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> bool:
        line = await reader.readline()
        if not line:
            return False
        method, target, _ = line.decode("latin-1").split(" ", 2)
        headers: dict[str, str] = {}
        while True:
            raw = await reader.readline()
            if raw in (b"\r\n", b"\n", b""):
                break
            name, _, value = raw.decode("latin-1").partition(":")
            headers[name.strip().lower()] = value.strip()
        length = int(headers.get("content-length") or 0)
        body = await reader.readexactly(length) if length else b""
        request = RecordedRequest(method, target.split("?", 1)[0], headers, body)
        self.requests.append(request)
        reply = self._next(request)
        delay = self.latency_s + reply.delay_s
        if delay > 0:
            await asyncio.sleep(delay)
        if reply.fault == "reset":
            sock = writer.get_extra_info("socket")
            if sock is not None:
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            writer.transport.abort()
            return False
        if reply.fault == "endless":
            await _endless_body(writer, reply)
            return False
        payload = reply.payload()
        head = {"content-type": "application/json", **{k.lower(): v for k, v in reply.headers.items()},
                "content-length": str(len(payload)), "connection": "keep-alive"}
        status_line = f"HTTP/1.1 {reply.status} {_REASONS.get(reply.status, 'Status')}\r\n"
        writer.write((status_line + "".join(f"{k}: {v}\r\n" for k, v in head.items()) + "\r\n").encode()
                     + payload)
        await writer.drain()
        return True


async def _endless_body(writer: asyncio.StreamWriter, reply: Reply) -> None:
    writer.write(b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ntransfer-encoding: chunked\r\n\r\n")
    chunk = (b" " * 65536) if reply.body is None else reply.body
    sent = 0
    try:
        while sent < reply.endless_limit_bytes:
            writer.write(f"{len(chunk):x}\r\n".encode() + chunk + b"\r\n")
            await writer.drain()
            sent += len(chunk)
    except (ConnectionError, OSError):
        return
    writer.close()


@pytest.fixture
def scripted_server():
    """A started ScriptedServer, stopped after the test (see the module docstring)."""
    server = ScriptedServer().start()
    try:
        yield server
    finally:
        server.stop()


def main() -> None:  # pragma: no cover - used by benchmarks as a separate process
    parser = argparse.ArgumentParser(description="scripted wire-protocol server (auto replies)")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--latency-ms", type=float, default=0.0)
    args = parser.parse_args()
    server = ScriptedServer(latency_s=args.latency_ms / 1000, port=args.port).start()
    print(f"READY {server.base_url}", flush=True)
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        server.stop()


if __name__ == "__main__":  # pragma: no cover
    main()
