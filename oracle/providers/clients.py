"""The sync and async clients: a wire format, the shared core, and a driver that moves bytes.

``make_chat_client`` / ``make_async_chat_client`` pick the OpenAI-compatible or the Anthropic
format from ``settings.kind``; ``make_decision_client`` / ``make_async_decision_client`` pick the
System One or the Decisions format. Every client takes an optional httpx ``transport`` (the seam
tests use) and keyword-only ``sleep``/``clock``/``rng`` so retry timing can be driven without
waiting. The concurrency limit is per client object: share one client per provider.
"""

from __future__ import annotations

import asyncio
import math
import ssl
from functools import lru_cache
import random
import threading
import time
from typing import Any, Awaitable, Callable

import httpx

from oracle.config.model import Price, ProviderSettings
from oracle.errors import ConfigError
from oracle.providers._body import aread_capped, read_capped
from oracle.providers._core import ClientCore, Prepared, WireFormat, as_hit
from oracle.providers._http import SlotPool, run_async, run_sync
from oracle.providers.budget import Budget, Meter, meter_for
from oracle.providers.anthropic import AnthropicMessagesFormat
from oracle.providers.decisions import DecisionsFormat, SystemOneFormat
from oracle.providers.openai_chat import OpenAIChatFormat
from oracle.providers.types import Capabilities, ChatReply, ChatRequest, DecisionReply, DecisionRequest

Prices = dict[str, Price] | None

@lru_cache(maxsize=1)
def shared_ssl_context() -> ssl.SSLContext:
    """One TLS context per process: building it loads the CA bundle (~70 ms of CPU)."""
    return httpx.create_ssl_context()


SHARD_CONNECTIONS = 8
"""Connections per httpx pool in the async client; more concurrency means more pools (see SlotPool)."""


def chat_format(settings: ProviderSettings) -> WireFormat:
    if settings.kind == "openai":
        return OpenAIChatFormat(settings)
    if settings.kind == "anthropic":
        return AnthropicMessagesFormat(settings)
    raise ConfigError(f"providers: kind {settings.kind!r} is a decision endpoint, not a chat endpoint")


def decision_format(settings: ProviderSettings) -> WireFormat:
    if settings.kind == "systemone":
        return SystemOneFormat(settings)
    if settings.kind == "decisions":
        return DecisionsFormat(settings)
    raise ConfigError(f"providers: kind {settings.kind!r} has no native decision endpoint; "
                      "use a logprob readout over the chat client instead")


def _meter(client: Any, prepared: Any) -> Meter:
    """The budget meter of one call (oracle/providers/budget.py)."""
    core = client._core
    return meter_for(client.budget, core.settings, core.prices, prepared.content, prepared.sent)


def _billed(meter: Meter, send: Callable[[], httpx.Response]) -> httpx.Response:
    """``send()``; an attempt that never connected or got an error status costs nothing."""
    try:
        response = send()
    except httpx.ConnectError:
        meter.not_billed()
        raise
    if not response.is_success:
        meter.not_billed()
    return response


class _SyncClient:
    def __init__(self, settings: ProviderSettings, wire: WireFormat, *, prices: Prices = None,
                 transport: httpx.BaseTransport | None = None,
                 sleep: Callable[[float], None] = time.sleep, clock: Callable[[], float] = time.monotonic,
                 rng: random.Random | None = None, budget: Budget | None = None) -> None:
        self._core = ClientCore(settings, wire, prices=prices, clock=clock, rng=rng)
        self.budget = budget
        """The pool's budget (oracle/providers/budget.py); budgets scoped with ``using`` apply too."""
        self._http = httpx.Client(transport=transport, follow_redirects=False, verify=shared_ssl_context())
        self._sleep = sleep
        self._limiter = threading.BoundedSemaphore(settings.concurrency)

    @property
    def settings(self) -> ProviderSettings:
        return self._core.settings

    @property
    def capabilities(self) -> Capabilities:
        return self._core.capabilities

    def _call(self, req: Any) -> Any:
        core = self._core
        prepared = core.prepare(req)
        hit = core.cached(prepared)
        if hit is not None:
            return hit
        cap = core.settings.max_reply_bytes

        def send(timeout_s: float, meter: Meter) -> httpx.Response:
            meter.before_send()  # the budget: every attempt asks first, after the cache lookup
            request = self._http.build_request("POST", prepared.url, content=prepared.content,
                                               headers=prepared.headers, timeout=timeout_s)
            response = _billed(meter, lambda: self._http.send(request, stream=True))
            try:
                return read_capped(response, cap, timeout_s=timeout_s)
            finally:
                response.close()

        with _meter(self, prepared) as meter:
            delivered = run_sync(core.flow(prepared), lambda t: send(t, meter), sleep=self._sleep,
                                 limiter=self._limiter, clock=core.clock)
            return meter.charged(core.finish(req, prepared, delivered))

    def close(self) -> None:
        self._http.close()
        self._core.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class _AsyncClient:
    def __init__(self, settings: ProviderSettings, wire: WireFormat, *, prices: Prices = None,
                 transport: httpx.AsyncBaseTransport | None = None,
                 sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
                 clock: Callable[[], float] = time.monotonic, rng: random.Random | None = None,
                 budget: Budget | None = None) -> None:
        self._core = ClientCore(settings, wire, prices=prices, clock=clock, rng=rng)
        self.budget = budget
        """The pool's budget (oracle/providers/budget.py); budgets scoped with ``using`` apply too."""
        # An injected transport is one pool already; sharding only helps with our own transports.
        shards = 1 if transport is not None else math.ceil(settings.concurrency / SHARD_CONNECTIONS)
        per_shard = math.ceil(settings.concurrency / shards)
        limits = httpx.Limits(max_connections=per_shard, max_keepalive_connections=per_shard)
        verify = shared_ssl_context()
        self._shards = [httpx.AsyncClient(transport=transport, follow_redirects=False, limits=limits,
                                          verify=verify) for _ in range(shards)]
        self._sleep = sleep
        self._slots = SlotPool(settings.concurrency, shards)
        self._inflight: dict[str, asyncio.Future[Any]] = {}
        """Cache key -> the call in flight for it (only with a cache; see ``_call``)."""

    @property
    def settings(self) -> ProviderSettings:
        return self._core.settings

    @property
    def capabilities(self) -> Capabilities:
        return self._core.capabilities

    async def _call(self, req: Any) -> Any:
        core = self._core
        prepared = core.prepare(req)
        hit = core.cached(prepared)
        if hit is not None:
            return hit
        if core.cache is None:
            return await self._send(req, prepared)
        # With a cache, one key has one answer: a request whose key is already in flight waits for
        # that call and shares its reply (as a hit), so which of two identical requests reached
        # the cache first never decides what a rerun from the cache returns. If the first call
        # fails, the waiting one makes its own.
        while (pending := self._inflight.get(prepared.key)) is not None:
            reply = await asyncio.shield(pending)
            if reply is not None:
                return as_hit(reply)
        done: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._inflight[prepared.key] = done
        reply = None
        try:
            reply = await self._send(req, prepared)
            return reply
        finally:
            del self._inflight[prepared.key]
            done.set_result(reply)

    async def _send(self, req: Any, prepared: Prepared) -> Any:
        core = self._core
        cap = core.settings.max_reply_bytes

        async def send(timeout_s: float, shard: int, meter: Meter) -> httpx.Response:
            meter.before_send()  # the budget: every attempt asks first, after the cache lookup
            http = self._shards[shard]
            request = http.build_request("POST", prepared.url, content=prepared.content,
                                         headers=prepared.headers, timeout=timeout_s)
            try:
                response = await http.send(request, stream=True)
            except httpx.ConnectError:
                meter.not_billed()
                raise
            if not response.is_success:
                meter.not_billed()
            try:
                return await aread_capped(response, cap)
            finally:
                await response.aclose()

        with _meter(self, prepared) as meter:
            delivered = await run_async(core.flow(prepared), lambda t, shard: send(t, shard, meter),
                                        sleep=self._sleep, slots=self._slots, clock=core.clock)
            return meter.charged(core.finish(req, prepared, delivered))

    async def aclose(self) -> None:
        for http in self._shards:
            await http.aclose()
        self._core.close()

    async def __aenter__(self):
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()


class ChatClient(_SyncClient):
    """Blocking chat client: ``complete(ChatRequest) -> ChatReply``."""

    def complete(self, req: ChatRequest) -> ChatReply:
        return self._call(req)


class AsyncChatClient(_AsyncClient):
    """Async chat client: ``await complete(ChatRequest) -> ChatReply``."""

    async def complete(self, req: ChatRequest) -> ChatReply:
        return await self._call(req)


class DecisionClient(_SyncClient):
    """Blocking native decision client: ``decide(DecisionRequest) -> DecisionReply``."""

    def decide(self, req: DecisionRequest) -> DecisionReply:
        return self._call(req)


class AsyncDecisionClient(_AsyncClient):
    """Async native decision client: ``await decide(DecisionRequest) -> DecisionReply``."""

    async def decide(self, req: DecisionRequest) -> DecisionReply:
        return await self._call(req)


def make_chat_client(settings: ProviderSettings, *, prices: Prices = None,
                     transport: httpx.BaseTransport | None = None, **timing: Any) -> ChatClient:
    return ChatClient(settings, chat_format(settings), prices=prices, transport=transport, **timing)


def make_async_chat_client(settings: ProviderSettings, *, prices: Prices = None,
                           transport: httpx.AsyncBaseTransport | None = None,
                           **timing: Any) -> AsyncChatClient:
    return AsyncChatClient(settings, chat_format(settings), prices=prices, transport=transport, **timing)


def make_decision_client(settings: ProviderSettings, *, prices: Prices = None,
                         transport: httpx.BaseTransport | None = None, **timing: Any) -> DecisionClient:
    return DecisionClient(settings, decision_format(settings), prices=prices, transport=transport, **timing)


def make_async_decision_client(settings: ProviderSettings, *, prices: Prices = None,
                               transport: httpx.AsyncBaseTransport | None = None,
                               **timing: Any) -> AsyncDecisionClient:
    return AsyncDecisionClient(settings, decision_format(settings), prices=prices, transport=transport,
                               **timing)
