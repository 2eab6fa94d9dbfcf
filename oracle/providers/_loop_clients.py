"""Reuse one async client per (event loop, endpoint) so a batch keeps its connections warm.

httpx async clients belong to the event loop that opened their connections. A batch runs every
task on one loop, so strategies fetch their client here instead of opening one per evaluation
(which cost a TLS context and a new TCP connection per task). A loop that ends takes its clients
with it: entries are keyed weakly by the loop.
"""

from __future__ import annotations

import asyncio
import weakref
from typing import Any, Callable, Hashable

_BY_LOOP: "weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[Hashable, Any]]" = \
    weakref.WeakKeyDictionary()


def loop_client(key: Hashable, factory: Callable[[], Any]) -> Any:
    """The client for ``key`` on the running loop, built by ``factory`` on first use."""
    loop = asyncio.get_running_loop()
    clients = _BY_LOOP.get(loop)
    if clients is None:
        clients = _BY_LOOP[loop] = {}
    client = clients.get(key)
    if client is None:
        client = clients[key] = factory()
    return client


async def close_loop_clients() -> None:
    """Close every client opened on the running loop (call before the loop ends, e.g. in a batch)."""
    clients = _BY_LOOP.pop(asyncio.get_running_loop(), {})
    for client in clients.values():
        await client.aclose()


_KEYS: dict[int, tuple[Any, Any, tuple[str, str, str]]] = {}


def endpoint_key(settings: Any, prices: Any) -> tuple[str, str, str]:
    """A cache key for an endpoint: its settings, its price table and (hashed) its key.

    Memoized per (settings, prices) object pair: configs are frozen, and the objects are held in
    the memo so an id can never be reused by a different object.
    """
    memo = _KEYS.get(id(settings))
    if memo is not None and memo[0] is settings and memo[1] is prices:
        return memo[2]
    key = _endpoint_key(settings, prices)
    if len(_KEYS) > 256:
        _KEYS.clear()
    _KEYS[id(settings)] = (settings, prices, key)
    return key


def _endpoint_key(settings: Any, prices: Any) -> tuple[str, str, str]:
    import hashlib

    secret = settings.resolved_api_key() or ""
    prices_json = "" if prices is None else repr(sorted((k, v.model_dump_json()) for k, v in prices.items()))
    return (settings.model_dump_json(), prices_json, hashlib.sha256(secret.encode()).hexdigest())
