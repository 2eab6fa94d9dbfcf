"""The provider pool: the async model clients of one owner, one client per endpoint.

An httpx async client belongs to the event loop that opened its connections, and someone has to
close it. The pool is that someone: the Oracle owns one (``async with Oracle(...)`` or
``await oracle.aclose()``), a batch keeps it open for its whole run, and evaluators get their
clients from it through ``EvaluationContext.providers``. Every evaluator that talks to the same
endpoint shares one client, so the endpoint's concurrency limit holds per provider.

A pool serves one event loop at a time: asking it for a client from a second loop while clients
opened on the first are still open is an error (those connections could never be closed there);
after ``aclose()`` it may be used again, on any loop.
"""

from __future__ import annotations

import hashlib
from typing import TYPE_CHECKING, Any, Mapping

if TYPE_CHECKING:
    import asyncio

    import httpx

    from oracle.config.model import Price, ProviderSettings
    from oracle.providers.budget import Budget
    from oracle.providers.clients import AsyncChatClient, AsyncDecisionClient

__all__ = ["ProviderPool", "ProviderPoolError", "endpoint_key"]


class ProviderPoolError(RuntimeError):
    """The pool was used in a way that would leak connections (e.g. from a second event loop)."""


def endpoint_key(settings: ProviderSettings, prices: Mapping[str, Price] | None) -> str:
    """What makes two endpoints the same: their settings, their price table and (hashed) their key.

    The API key itself never appears in the key, only its sha256.
    """
    secret = settings.resolved_api_key() or ""
    price_json = "" if prices is None else repr(sorted((k, v.model_dump_json()) for k, v in prices.items()))
    material = "\n".join((settings.model_dump_json(), price_json, hashlib.sha256(secret.encode()).hexdigest()))
    return hashlib.sha256(material.encode()).hexdigest()


class ProviderPool:
    """Owns async chat and decision clients, one per (kind, endpoint); close with ``aclose()``.

    ``transport`` (optional) is handed to every client this pool opens: the seam tests use to
    fault-inject at the httpx level. Without it each client opens real connections.
    ``budget`` (optional, oracle/providers/budget.py): every request of every client this pool opens
    must fit it (a budget scoped with ``budget.using`` applies as well).
    """

    def __init__(self, *, transport: httpx.AsyncBaseTransport | None = None, budget: Budget | None = None) -> None:
        self.transport = transport
        self.budget = budget
        self._clients: dict[tuple[str, str], Any] = {}
        self._loop: asyncio.AbstractEventLoop | None = None

    def chat(self, settings: ProviderSettings, prices: Mapping[str, Price] | None = None) -> AsyncChatClient:
        """The chat client for this endpoint (opened on first use, on the running loop)."""
        from oracle.providers.clients import make_async_chat_client

        return self._get("chat", settings, prices, make_async_chat_client)  # type: ignore[no-any-return]

    def decision(self, settings: ProviderSettings,
                 prices: Mapping[str, Price] | None = None) -> AsyncDecisionClient:
        """The native decision client for this endpoint (opened on first use, on the running loop)."""
        from oracle.providers.clients import make_async_decision_client

        return self._get("decision", settings, prices, make_async_decision_client)  # type: ignore[no-any-return]

    def _get(self, kind: str, settings: ProviderSettings, prices: Mapping[str, Price] | None,
             make: Any) -> Any:
        import asyncio  # here, not at import: routing with an Oracle needs no event loop

        loop = asyncio.get_running_loop()
        if self._clients and self._loop is not loop:
            raise ProviderPoolError(
                "this provider pool still holds clients opened on another event loop; "
                "await pool.aclose() (or leave `async with oracle`) on that loop before using it on a new one")
        self._loop = loop
        key = (kind, endpoint_key(settings, prices))
        client = self._clients.get(key)
        if client is None:
            client = self._clients[key] = make(settings, prices=dict(prices) if prices is not None else None,
                                               transport=self.transport, budget=self.budget)
        return client

    @property
    def open_clients(self) -> int:
        """How many clients are open (for tests and diagnostics)."""
        return len(self._clients)

    async def aclose(self) -> None:
        """Close every client this pool opened; the pool may be used again afterwards."""
        clients, self._clients, self._loop = list(self._clients.values()), {}, None
        errors: list[BaseException] = []
        for client in clients:
            try:
                await client.aclose()
            except Exception as exc:  # noqa: BLE001 - close the rest, then report the first failure
                errors.append(exc)
        if errors:
            raise errors[0]

    async def __aenter__(self) -> ProviderPool:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()
