"""The library's log records as dicts, for tests: ``with captured_logs() as logs: ...``.

The library logs through stdlib ``logging`` (oracle/_internal/log.py). A handler on the ``oracle``
logger itself (not the root: the CLI's setup, run in-process by some tests, stops propagation)
collects each record as ``{"event", "log_level", "logger", **fields}``; the logger's level is
lowered to ``level`` for the duration and restored afterwards.
"""

from __future__ import annotations

import contextlib
import logging
from typing import Any, Iterator

import pytest


class _Collect(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.events: list[dict[str, Any]] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.events.append({"event": getattr(record, "oracle_event", record.getMessage()),
                            "log_level": record.levelname.lower(), "logger": record.name,
                            **getattr(record, "oracle_fields", {})})


@contextlib.contextmanager
def captured_logs(level: int = logging.DEBUG) -> Iterator[list[dict[str, Any]]]:
    logger = logging.getLogger("oracle")
    handler, saved = _Collect(), logger.level
    logger.addHandler(handler)
    logger.setLevel(level)
    try:
        yield handler.events
    finally:
        logger.removeHandler(handler)
        logger.setLevel(saved)


@pytest.fixture
def oracle_logs() -> Iterator[list[dict[str, Any]]]:
    """Every record the library logs during the test (see ``captured_logs``)."""
    with captured_logs() as events:
        yield events
