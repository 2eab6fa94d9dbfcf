"""Stopping a run over many items when its model endpoint on this machine is not running.

Why: with nothing listening at the judge's loopback endpoint, every item that needs the model
fails the same way. Writing those failures as rows would be worse than useless: a rerun resumes
them, so they would never be computed once the server is up. So the first item whose evaluation
says ``EndpointUnreachable`` (a refused loopback connection, oracle/providers/_http.py) stops the
run: no new item starts, items in flight that hit it too are not written, and the run ends with the
hint that says how to start the server. Items that needed no model call (resumed rows, cache hits,
the verifier) are unaffected; the endpoint is effectively checked once per run, by the first item
that needed it.
"""

from __future__ import annotations

from typing import Any

from oracle.errors import EndpointUnreachable

UNREACHABLE = EndpointUnreachable.__name__


def unreachable(error: Any) -> str | None:
    """The message of ``error`` (an ``ErrorInfo``, or its dict in a row or a record) when it says a
    loopback model endpoint is not running; None for any other error, or none."""
    if error is None:
        return None
    kind = error.get("type") if isinstance(error, dict) else getattr(error, "type", None)
    if kind != UNREACHABLE:
        return None
    message = error.get("message") if isinstance(error, dict) else getattr(error, "message", None)
    return str(message or UNREACHABLE)


class Halt:
    """The stop signal of one run: ``keep(row)`` is False for a row that hit a down endpoint (and
    from then on ``reason`` holds that row's message and ``stopped`` is True)."""

    def __init__(self) -> None:
        self.reason: str | None = None
        self.dropped = 0
        """Rows computed but not kept because their endpoint was down."""

    @property
    def stopped(self) -> bool:
        return self.reason is not None

    def keep(self, row: dict[str, Any]) -> bool:
        message = unreachable(row.get("error"))
        if message is None:
            return True
        self.reason = self.reason or message
        self.dropped += 1
        return False

    def error(self) -> EndpointUnreachable:
        """The error a run raises (or a CLI prints) when it stopped."""
        return EndpointUnreachable(self.reason or UNREACHABLE)
