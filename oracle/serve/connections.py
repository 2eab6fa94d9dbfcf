"""Connection-level limits uvicorn does not set itself: how many sockets, and how long a request head.

Why: before any ASGI code runs, uvicorn holds every accepted connection and buffers a request
head until it is complete (h11 caps one head at 16 KiB), with no deadline. A client that opens
thousands of sockets, or sends a head one byte every few seconds ("slowloris"), would make the
server's memory grow with the number of sockets it holds. This protocol closes a connection that
arrives past ``max_connections`` at once, and one whose request head is not complete
``header_timeout_s`` after its first byte; bodies are bounded by the ``Guard`` (size and time).
"""

from __future__ import annotations

import asyncio
from typing import Any

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

MAX_HEAD_BYTES = 16 * 1024
"""h11's limit on one request head (request line and headers); a longer one is a 400."""


class GuardedH11Protocol(H11Protocol):
    """uvicorn's h11 protocol with a connection cap and a request-head deadline."""

    max_connections = 256
    header_timeout_s = 10.0

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._head_timer: asyncio.TimerHandle | None = None
        self._head_cycle: object = None

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        if len(self.connections) > self.max_connections:
            transport.abort()  # nothing read, nothing kept: connection_lost forgets it
            return
        self._arm()

    def data_received(self, data: bytes) -> None:
        if self._head_timer is None and self.conn.their_state is h11.IDLE:
            self._arm()  # the first byte of a new request head (keep-alive): its deadline starts
        super().data_received(data)
        if self.conn.their_state is not h11.IDLE:
            self._disarm()

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        super().connection_lost(exc)

    def _arm(self) -> None:
        self._disarm()
        self._head_cycle = self.cycle
        self._head_timer = self.loop.call_later(self.header_timeout_s, self._head_expired)

    def _disarm(self) -> None:
        if self._head_timer is not None:
            self._head_timer.cancel()
            self._head_timer = None

    def _head_expired(self) -> None:
        self._head_timer = None
        if self.transport.is_closing():
            return
        if self.conn.their_state is h11.IDLE and self.cycle is self._head_cycle:
            self.transport.abort()  # no complete request head in time: drop the buffered bytes


def protocol_class(*, max_connections: int, header_timeout_s: float) -> type[GuardedH11Protocol]:
    """A protocol class carrying the server's settings (uvicorn instantiates it per connection)."""
    return type("ServeH11Protocol", (GuardedH11Protocol,),
                {"max_connections": max_connections, "header_timeout_s": header_timeout_s})
