"""Logging setup for the CLI: one handler on stderr for the ``oracle`` loggers, console or JSON lines.

The library only hands records to stdlib ``logging`` (oracle/_internal/log.py) and imports no
logging package; the CLI, being the application, renders them here: a handler on stderr (never
stdout, which carries the results) formatting each record with structlog's console or JSON
renderer. structlog is imported by this module alone, so only a command that logs pays for it.
"""

from __future__ import annotations

import logging
import os
import sys
from datetime import datetime, timezone
from typing import Any, MutableMapping

import structlog

_HANDLER_NAME = "oracle-cli"


class StructuredFormatter(logging.Formatter):
    """Render a record (from oracle's loggers or plain stdlib ones) with a structlog renderer."""

    def __init__(self, renderer: Any) -> None:
        super().__init__()
        self.renderer = renderer

    def format(self, record: logging.LogRecord) -> str:
        event: dict[str, Any] = {
            "event": getattr(record, "oracle_event", None) or record.getMessage(),
            **getattr(record, "oracle_fields", {}),
            "level": record.levelname.lower(),
            "logger": record.name,
            "timestamp": datetime.fromtimestamp(record.created, timezone.utc).isoformat(),
        }
        if record.exc_info:
            event["exception"] = self.formatException(record.exc_info)
        return str(self.renderer(None, record.levelname.lower(), event))


def to_stdlib(logger: Any, method_name: str,
              event_dict: MutableMapping[str, Any]) -> tuple[tuple[str], dict[str, Any]]:
    """Last processor for code that logs through structlog itself (a plugin, say): the event dict
    becomes a stdlib record shaped like the library's, so the same handler renders it."""
    fields = dict(event_dict)
    event = str(fields.pop("event", ""))
    text = " ".join([event, *(f"{key}={value!r}" for key, value in fields.items())])
    return (text,), {"extra": {"oracle_event": event, "oracle_fields": fields}}


def configure_logging(fmt: str = "console", level: str = "warning") -> None:
    """Readable console lines or JSON lines, on stderr, at ``level`` and above (colour only on a
    terminal, and never with ``NO_COLOR`` set)."""
    lvl = getattr(logging, level.upper(), logging.WARNING)
    colors = sys.stderr.isatty() and not os.environ.get("NO_COLOR")
    renderer = (structlog.processors.JSONRenderer() if fmt == "json"
                else structlog.dev.ConsoleRenderer(colors=colors))
    handler = logging.StreamHandler(sys.stderr)
    handler.set_name(_HANDLER_NAME)
    handler.setFormatter(StructuredFormatter(renderer))
    logger = logging.getLogger("oracle")
    for old in [h for h in logger.handlers if h.get_name() == _HANDLER_NAME]:
        logger.removeHandler(old)
    logger.addHandler(handler)
    logger.setLevel(lvl)
    logger.propagate = False
    # Code that asks structlog for a logger directly goes the same way (structlog's default is stdout).
    structlog.configure(processors=[structlog.stdlib.filter_by_level, to_stdlib],
                        logger_factory=structlog.stdlib.LoggerFactory(),
                        wrapper_class=structlog.stdlib.BoundLogger, cache_logger_on_first_use=False)
