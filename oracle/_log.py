"""Library logging: structlog's key-value API, delivered through stdlib ``logging``.

Nothing is configured here and nothing is printed: each logger hands its record to the stdlib logger
of the same name (``oracle``, ``oracle.providers``...), which the application configures, or not.
The message is ``event key=value ...`` so plain stdlib handlers show the facts; the structured
fields also ride on the record (``oracle_event``, ``oracle_fields``) for the CLI's renderer
(oracle/logging_setup.py) or any handler that wants them. structlog's own global configuration (whose
default prints to stdout) is never used, so a host application's structlog setup is left alone.
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


def get_logger(name: str) -> Any:
    """A structlog logger (``log.info("event", key=value)``) writing to ``logging.getLogger(name)``."""
    return structlog.wrap_logger(logging.getLogger(name), processors=PROCESSORS,
                                 wrapper_class=structlog.stdlib.BoundLogger)
