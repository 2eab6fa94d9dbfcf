"""Logging setup for the CLI: one handler on stderr for the ``oracle`` loggers, console or JSON lines.

The library never configures logging (oracle/_internal/log.py hands records to stdlib ``logging``); the CLI,
being the application, does it here: a handler on stderr (never stdout, which carries the JSON
results) rendering each record with structlog's console or JSON renderer.
"""

from __future__ import annotations

import logging
import sys
from datetime import datetime, timezone
from typing import Any

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


def configure_logging(fmt: str = "console", level: str = "warning") -> None:
    """Readable console lines or JSON lines, on stderr, at ``level`` and above."""
    from oracle._internal.log import PROCESSORS

    lvl = getattr(logging, level.upper(), logging.WARNING)
    renderer = (structlog.processors.JSONRenderer() if fmt == "json"
                else structlog.dev.ConsoleRenderer(colors=sys.stderr.isatty()))
    handler = logging.StreamHandler(sys.stderr)
    handler.set_name(_HANDLER_NAME)
    handler.setFormatter(StructuredFormatter(renderer))
    logger = logging.getLogger("oracle")
    for old in [h for h in logger.handlers if h.get_name() == _HANDLER_NAME]:
        logger.removeHandler(old)
    logger.addHandler(handler)
    logger.setLevel(lvl)
    logger.propagate = False
    # Code that asks structlog for a logger directly goes the same way (its default is stdout).
    structlog.configure(processors=PROCESSORS,
                        logger_factory=structlog.stdlib.LoggerFactory(),
                        wrapper_class=structlog.stdlib.BoundLogger, cache_logger_on_first_use=False)
