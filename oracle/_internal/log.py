"""Library logging: ``log.info("event", key=value)`` on the standard library's ``logging``.

Nothing is configured here and nothing is printed: each logger is a thin front on the stdlib logger
of the same name (``oracle``, ``oracle.providers``...), which the application configures, or not.
Why stdlib and no logging package of our own: a library caller pays for nothing it did not choose
(structlog alone costs more to import than routing a task), and whatever it set up (plain
handlers, structlog's ``ProcessorFormatter``, a log shipper) sees every record. The message is
``event key=value ...`` so plain handlers show the facts; the structured fields also ride on the
record (``oracle_event``, ``oracle_fields``) for the CLI's renderer (oracle/cli/logs.py) or any
handler that wants them.
"""

from __future__ import annotations

import logging
from typing import Any

logging.getLogger("oracle").addHandler(logging.NullHandler())  # the library-logging convention


class Logger:
    """``log.info("event", key=value)``: one stdlib record carrying the event and its fields."""

    __slots__ = ("name", "_logger")

    def __init__(self, name: str) -> None:
        self.name = name
        self._logger = logging.getLogger(name)

    def _log(self, level: int, event: str, fields: dict[str, Any]) -> None:
        if not self._logger.isEnabledFor(level):  # nothing is formatted for a record nobody wants
            return
        text = " ".join([event, *(f"{key}={value!r}" for key, value in fields.items())])
        # stacklevel 3: the record names the caller of info()/warning(), not this module.
        self._logger.log(level, text, extra={"oracle_event": event, "oracle_fields": fields}, stacklevel=3)

    def debug(self, event: str, **fields: Any) -> None:
        self._log(logging.DEBUG, event, fields)

    def info(self, event: str, **fields: Any) -> None:
        self._log(logging.INFO, event, fields)

    def warning(self, event: str, **fields: Any) -> None:
        self._log(logging.WARNING, event, fields)

    def error(self, event: str, **fields: Any) -> None:
        self._log(logging.ERROR, event, fields)


def get_logger(name: str) -> Logger:
    """The logger for ``name`` (``oracle``, ``oracle.providers``...)."""
    return Logger(name)
