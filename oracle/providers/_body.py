"""Reading a reply body with a size cap and a wall-clock bound, for the sync and async clients.

Why: a model server that never stops talking (a runaway generation, a broken proxy, a hostile
endpoint) used to be read into memory whole. Bodies are streamed and counted after
decompression, so a small gzip bomb counts at its real size; past ``max_reply_bytes`` reading
stops and the call fails with ``ResponseTooLarge`` (not retried: the same request would get the
same answer). A server that trickles bytes is cut at the attempt's timeout; the async driver
bounds every attempt already, the sync one gets the same bound here.
"""

from __future__ import annotations

import time
from typing import AsyncIterator, Callable, Iterator

import httpx

from oracle.errors import ResponseTooLarge

_DROP = {"content-encoding", "content-length", "transfer-encoding"}


def _too_large(response: httpx.Response, cap: int, seen: int | None = None) -> ResponseTooLarge:
    size = f"{seen}+ bytes" if seen is not None else f"{response.headers.get('content-length')} bytes declared"
    return ResponseTooLarge(f"reply from {response.request.url.copy_with(query=None)} is larger than "
                            f"max_reply_bytes={cap} ({size}); reading stopped", status=response.status_code)


def _declared_too_large(response: httpx.Response, cap: int) -> bool:
    declared = response.headers.get("content-length", "")
    encoded = response.headers.get("content-encoding", "identity").lower() not in ("", "identity")
    return declared.isdigit() and int(declared) > cap and not encoded


def _rebuilt(response: httpx.Response, body: bytes) -> httpx.Response:
    """A plain response holding the decoded body (so nothing decodes it twice)."""
    headers = [(k, v) for k, v in response.headers.multi_items() if k.lower() not in _DROP]
    return httpx.Response(response.status_code, headers=headers, content=body, request=response.request,
                          extensions=response.extensions)


def read_capped(response: httpx.Response, cap: int, *, timeout_s: float,
                clock: Callable[[], float] = time.monotonic) -> httpx.Response:
    """Read a streamed response (sync) into a plain one; the caller closes ``response``."""
    if _declared_too_large(response, cap):
        raise _too_large(response, cap)
    started, size, chunks = clock(), 0, []
    stream: Iterator[bytes] = response.iter_bytes()
    for chunk in stream:
        size += len(chunk)
        if size > cap:
            raise _too_large(response, cap, size)
        chunks.append(chunk)
        if clock() - started > timeout_s:
            raise httpx.ReadTimeout(f"reply still streaming after {timeout_s:g}s", request=response.request)
    return _rebuilt(response, b"".join(chunks))


async def aread_capped(response: httpx.Response, cap: int) -> httpx.Response:
    """Read a streamed response (async) into a plain one; the caller closes ``response``."""
    if _declared_too_large(response, cap):
        raise _too_large(response, cap)
    size, chunks = 0, []
    stream: AsyncIterator[bytes] = response.aiter_bytes()
    async for chunk in stream:
        size += len(chunk)
        if size > cap:
            raise _too_large(response, cap, size)
        chunks.append(chunk)
    return _rebuilt(response, b"".join(chunks))
