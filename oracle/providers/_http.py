"""One call with retries, written once as a generator and driven by a sync and an async runner.

``call_flow`` is the whole policy of a logical call: per-attempt timeout, overall deadline, which
failures are retried, how long to back off (honouring Retry-After), and which error is raised at the
end. It never sends or sleeps itself; it *yields* ``Send``/``Sleep`` actions and receives the
outcome (an ``httpx.Response`` or the exception the transport raised), the way httpx drives
``Auth.auth_flow``. ``run_sync`` and ``run_async`` only move bytes and wait, so the retry rules
exist in one copy. This is also the one place where httpx exceptions become ``ProviderError``\\ s.

Parse failures of a 2xx body (truncated JSON, garbage, a decision answer missing) are retried too:
behind proxies and overloaded servers they are usually transient, and the retry budget bounds the
cost when they are not.
"""

from __future__ import annotations

import asyncio
import dataclasses
import random
import threading
import time
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any, AsyncIterator, Awaitable, Callable, Generator, TypeVar

import httpx
from oracle._internal.log import get_logger

from oracle.errors import (EndpointUnreachable, ProviderError, ProviderHTTPError, ProviderTimeout,
                           RateLimited, ResponseParseError)
from oracle.providers._retry import RetryPolicy, is_retryable_status, parse_retry_after

T = TypeVar("T")
log = get_logger("oracle.providers")


@dataclass(frozen=True)
class Send:
    """Send the request once, with this per-attempt timeout (seconds)."""

    timeout_s: float


@dataclass(frozen=True)
class Sleep:
    """Back off for this long before the next attempt."""

    seconds: float


@dataclass(frozen=True)
class Delivered:
    """A parsed reply and how it was obtained."""

    value: Any
    attempts: int
    response: httpx.Response
    sent_at: float | None = None
    """Clock reading when the first attempt got its concurrency slot (queueing excluded)."""


@dataclass(frozen=True)
class _Failure:
    cls: type[ProviderError]
    message: str
    retryable: bool
    status: int | None = None
    body: str | None = None
    retry_after_s: float | None = None

    def error(self, attempts: int, suffix: str = "") -> ProviderError:
        return self.cls(f"{self.message}{suffix} (after {attempts} attempt{'s' * (attempts != 1)})",
                        status=self.status, body=self.body, attempts=attempts)


Flow = Generator[Send | Sleep, Any, Delivered]


def call_flow(parse: Callable[[httpx.Response], Any], *, policy: RetryPolicy, timeout_s: float,
              deadline_s: float | None, clock: Callable[[], float], rng: random.Random,
              label: dict[str, Any]) -> Flow:
    """The retry loop of one logical call; ``label`` (base_url, model) only goes into log events."""
    start = clock()
    attempt = 0
    while True:
        remaining = None if deadline_s is None else deadline_s - (clock() - start)
        if remaining is not None and remaining <= 0:
            raise ProviderTimeout(f"overall deadline of {deadline_s:g}s passed after {attempt} attempts",
                                  attempts=attempt)
        attempt += 1
        per_attempt = timeout_s if remaining is None else min(timeout_s, remaining)
        outcome = yield Send(per_attempt)
        failure = _classify(outcome, per_attempt, str(label.get("base_url") or ""))
        if failure is None:
            try:
                return Delivered(parse(outcome), attempt, outcome)
            except ResponseParseError as exc:
                failure = _Failure(ResponseParseError, str(exc), True, outcome.status_code,
                                   _excerpt(outcome))
            except (ValueError, KeyError, TypeError, IndexError, AttributeError) as exc:
                failure = _Failure(ResponseParseError, f"unreadable reply body: {type(exc).__name__}: {exc}",
                                   True, outcome.status_code, _excerpt(outcome))
        if not failure.retryable or attempt > policy.max_retries:
            raise failure.error(attempt)
        if failure.retry_after_s is not None and failure.retry_after_s > policy.backoff_max_s:
            raise failure.error(attempt, f"; server asked to wait {failure.retry_after_s:g}s, "
                                         f"more than backoff_max_s={policy.backoff_max_s:g}")
        delay = policy.delay_s(attempt - 1, failure.retry_after_s, rng)
        if deadline_s is not None and (clock() - start) + delay >= deadline_s:
            raise failure.error(attempt, f"; no time left before the {deadline_s:g}s deadline")
        log.info("provider_retry", attempt=attempt, delay_s=round(delay, 3), error=failure.cls.__name__,
                 status=failure.status, **label)
        yield Sleep(delay)


LOCAL_HOSTS = ("127.0.0.1", "localhost", "[::1]", "::1")


def is_loopback(base_url: str) -> bool:
    try:
        return bool(base_url) and httpx.URL(base_url).host in LOCAL_HOSTS
    except (httpx.InvalidURL, TypeError, ValueError):
        return False


def connection_hint(base_url: str) -> str:
    """What to do when nothing listens at a loopback endpoint (the embedded model's, by default)."""
    if not is_loopback(base_url):
        return ""
    return (f"; nothing is listening at {base_url}: start the embedded local model with `oracle model serve`, "
            "or point ORACLE_BASE_URL at a running OpenAI-compatible server")


def _refused(exc: BaseException) -> bool:
    """Whether a connect error comes from a refused connection (a ConnectionRefusedError anywhere in
    its chain: httpx wraps httpcore's error, which wraps the socket's; "all connection attempts
    failed" keeps the last attempt's refusal as its context)."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, ConnectionRefusedError):
            return True
        current = current.__cause__ or current.__context__
    return False


def _classify(outcome: Any, timeout_s: float, base_url: str = "") -> _Failure | None:
    """None for a 2xx response; otherwise what went wrong and whether to retry.

    A loopback endpoint that refuses the connection has nothing listening: that does not pass by
    waiting (someone must start the server), so it is not retried (``EndpointUnreachable``). A
    refusal from another host is retried: a load balancer or a restarting server refuses for a moment."""
    if isinstance(outcome, (httpx.TimeoutException, TimeoutError)):
        return _Failure(ProviderTimeout, f"no reply within {timeout_s:g}s ({type(outcome).__name__})", True)
    if isinstance(outcome, httpx.TransportError):
        hint = connection_hint(base_url) if isinstance(outcome, httpx.ConnectError) else ""
        message = f"connection failed: {type(outcome).__name__}: {outcome}{hint}"
        if hint and _refused(outcome):
            return _Failure(EndpointUnreachable, message, False)
        return _Failure(ProviderError, message, True)
    if isinstance(outcome, BaseException):
        raise outcome
    response: httpx.Response = outcome
    status = response.status_code
    if 200 <= status < 300:
        return None
    retry_after = parse_retry_after(response.headers.get("retry-after"))
    if status == 429:
        return _Failure(RateLimited, "rate limited (HTTP 429)", True, status, _excerpt(response), retry_after)
    said = server_error_text(response)
    return _Failure(ProviderHTTPError, f"HTTP {status} from {response.request.url.copy_with(query=None)}"
                    + (f": {said}" if said else ""),
                    is_retryable_status(status), status, _excerpt(response), retry_after)


def server_error_text(response: httpx.Response, limit: int = 300) -> str:
    """The server's own words about the error: ``error.message`` (OpenAI, Anthropic), ``error`` or
    ``detail`` (FastAPI) or ``message`` in a JSON body, else the start of the text body."""
    try:
        body = response.json()
    except Exception:  # noqa: BLE001 - not JSON: the text itself
        body = None
    text = None
    if isinstance(body, dict):
        err = body.get("error")
        if isinstance(err, dict):
            text = err.get("message") or err.get("type")
        elif isinstance(err, str):
            text = err
        text = text or _detail_text(body.get("detail")) or body.get("message")
        if text is not None and not isinstance(text, str):
            text = str(text)
    if text is None:
        text = _excerpt(response)
    return " ".join(str(text).split())[:limit]


def _detail_text(detail: Any) -> Any:
    """FastAPI's ``detail``: ``{"error_type", "message"}`` -> the message; a validation list
    ``[{"loc", "msg"}]`` -> "loc: msg; ..."; anything else as it is."""
    if isinstance(detail, dict) and isinstance(detail.get("message"), str):
        kind = detail.get("error_type")
        return f"{kind}: {detail['message']}" if isinstance(kind, str) else detail["message"]
    if isinstance(detail, list) and detail and all(isinstance(d, dict) and "msg" in d for d in detail):
        return "; ".join(".".join(str(part) for part in d.get("loc") or []) + f": {d['msg']}" for d in detail)
    return detail


def _excerpt(response: httpx.Response) -> str:
    try:
        return response.text[:300]
    except Exception:  # noqa: BLE001 - undecodable body: the excerpt is only a hint
        return repr(response.content[:300])


def run_sync(flow: Flow, send: Callable[[float], httpx.Response], *,
             sleep: Callable[[float], None] = time.sleep,
             limiter: threading.Semaphore | None = None,
             clock: Callable[[], float] = time.monotonic) -> Delivered:
    """Drive ``flow`` with blocking I/O; ``limiter`` caps concurrent requests (not backoff sleeps)."""
    action = next(flow)
    sent_at = None
    while True:
        if isinstance(action, Sleep):
            sleep(action.seconds)
            outcome: Any = None
        else:
            if limiter is not None:
                limiter.acquire()
            try:
                sent_at = clock() if sent_at is None else sent_at
                outcome = send(action.timeout_s)
            except httpx.TransportError as exc:
                outcome = exc
            finally:
                if limiter is not None:
                    limiter.release()
        try:
            action = flow.send(outcome)
        except StopIteration as stop:
            return dataclasses.replace(stop.value, sent_at=sent_at)


class SlotPool:
    """``size`` concurrency slots, each tied to one of several connection pools (shards).

    A slot is both the per-provider concurrency limit and the choice of httpx client: httpcore's
    pool does work proportional to (connections x requests in flight) on every request, so 64
    requests through one pool cost milliseconds of CPU each, while 8 pools of 8 stay cheap.
    """

    def __init__(self, size: int, shards: int) -> None:
        self._slots = [i % shards for i in range(size)]
        self._queue: asyncio.Queue[int] | None = None

    @asynccontextmanager
    async def slot(self) -> AsyncIterator[int]:
        if self._queue is None:
            self._queue = asyncio.Queue()
            for shard in self._slots:
                self._queue.put_nowait(shard)
        shard = await self._queue.get()
        try:
            yield shard
        finally:
            self._queue.put_nowait(shard)


async def run_async(flow: Flow, send: Callable[[float, int], Awaitable[httpx.Response]], *,
                    sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
                    slots: SlotPool | None = None,
                    clock: Callable[[], float] = time.monotonic) -> Delivered:
    """Drive ``flow`` on the event loop; each attempt is also bounded as a whole by its timeout.

    ``send(timeout_s, shard)`` gets the shard of the slot it holds. httpx timeouts apply per
    network operation, so a server trickling bytes could outlast them; ``asyncio.timeout`` caps
    the attempt end to end (the wait for a slot is not counted).
    """
    action = next(flow)
    sent_at = None
    while True:
        if isinstance(action, Sleep):
            await sleep(action.seconds)
            outcome: Any = None
        else:
            try:
                if slots is not None:
                    async with slots.slot() as shard:
                        sent_at = clock() if sent_at is None else sent_at
                        outcome = await _bounded(send, action.timeout_s, shard)
                else:
                    sent_at = clock() if sent_at is None else sent_at
                    outcome = await _bounded(send, action.timeout_s, 0)
            except (httpx.TransportError, TimeoutError) as exc:
                outcome = exc
        try:
            action = flow.send(outcome)
        except StopIteration as stop:
            return dataclasses.replace(stop.value, sent_at=sent_at)


async def _bounded(send: Callable[[float, int], Awaitable[httpx.Response]], timeout_s: float,
                   shard: int) -> httpx.Response:
    async with asyncio.timeout(timeout_s + 0.05):
        return await send(timeout_s, shard)
