"""Library logging: structlog's key-value API, delivered through stdlib ``logging``.

Nothing is configured here and nothing is printed: each logger hands its record to the stdlib logger
of the same name (``oracle``, ``oracle.providers``...), which the application configures, or not;
an application that configured structlog itself gets the records through its own configuration.
The message is ``event key=value ...`` so plain stdlib handlers show the facts; the structured
fields also ride on the record (``oracle_event``, ``oracle_fields``) for the CLI's renderer
(oracle/_internal/logging_setup.py) or any handler that wants them. structlog's unconfigured default (which
prints to stdout) is never used, and the library never configures structlog.
"""

from __future__ import annotations

import logging
from typing import Any, MutableMapping

import structlog
from structlog.typing import Processor

logging.getLogger("oracle").addHandler(logging.NullHandler())  # the library-logging convention


def to_stdlib(logger: Any, method_name: str,
              event_dict: MutableMapping[str, Any]) -> tuple[tuple[str], dict[str, Any]]:
    """Last processor: the event dict -> (message,), {"extra": ...} for the stdlib logger call."""
    fields = dict(event_dict)
    event = str(fields.pop("event", ""))
    text = " ".join([event, *(f"{key}={value!r}" for key, value in fields.items())])
    return (text,), {"extra": {"oracle_event": event, "oracle_fields": fields}}


PROCESSORS: list[Processor] = [structlog.stdlib.filter_by_level, to_stdlib]


class Logger:
    """``log.info("event", key=value)``: to stdlib ``logging`` unless the application configured
    structlog itself (then its configuration decides, as for its own loggers; structlog's test
    helper ``capture_logs`` works this way too). Decided per call, so configuring later counts."""

    __slots__ = ("name", "_stdlib")

    def __init__(self, name: str) -> None:
        self.name = name
        self._stdlib = structlog.wrap_logger(logging.getLogger(name), processors=PROCESSORS,
                                             wrapper_class=structlog.stdlib.BoundLogger)

    def _target(self) -> Any:
        return structlog.get_logger(self.name) if structlog.is_configured() else self._stdlib

    def debug(self, event: str, **fields: Any) -> None:
        self._target().debug(event, **fields)

    def info(self, event: str, **fields: Any) -> None:
        self._target().info(event, **fields)

    def warning(self, event: str, **fields: Any) -> None:
        self._target().warning(event, **fields)

    def error(self, event: str, **fields: Any) -> None:
        self._target().error(event, **fields)


def get_logger(name: str) -> Logger:
    """The logger for ``name`` (``oracle``, ``oracle.providers``...)."""
    return Logger(name)
