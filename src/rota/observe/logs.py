"""How ``rota worker`` logs: every record on stderr, one line each, as text or as JSON objects.

The application's ``Rota(log_format=...)`` is known only once its module is imported, and that
import may log already; ``held`` keeps those records until the format is chosen, so that with
``json`` every line a worker writes is one JSON object, from its first line on.
"""

from __future__ import annotations

import contextlib
import json
import logging
import sys
from collections.abc import Iterator
from datetime import datetime, timezone
from logging.handlers import MemoryHandler
from typing import Any

# A record whose message only repeats its fields in text (``EventLog``'s) carries this attribute.
RENDERED = "rota_rendered"
STANDARD = frozenset(set(vars(logging.makeLogRecord({}))) | {"message", "asctime", RENDERED})
TEXT = "%(asctime)s %(levelname)-7s %(name)s: %(message)s"


class JsonLines(logging.Formatter):
    """Every record as one JSON object; rota's event fields become keys of their own."""

    def format(self, record: logging.LogRecord) -> str:
        data: dict[str, Any] = {
            "ts": datetime.fromtimestamp(record.created, timezone.utc).isoformat(),
            "level": record.levelname.lower(),
            "logger": record.name,
        }
        extra = {k: v for k, v in vars(record).items() if k not in STANDARD and v is not None}
        if "event" in extra:
            data["event"] = extra.pop("event")
        if not getattr(record, RENDERED, False):
            data["message"] = record.getMessage()
        data.update(extra)
        if record.exc_info:
            data["exception"] = self.formatException(record.exc_info)
        if record.stack_info:
            data["stack"] = self.formatStack(record.stack_info)
        return json.dumps(data, default=str, ensure_ascii=False)


def formatter(log_format: str) -> logging.Formatter:
    return JsonLines() if log_format == "json" else logging.Formatter(TEXT)


def configure_logging(level: str, log_format: str = "text") -> logging.Handler:
    """Send the records of every logger (rota's, handlers', the application's, warnings) to
    stderr; return the handler, whose formatter the caller may still change."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(formatter(log_format))
    logging.basicConfig(level=getattr(logging, level.upper()), handlers=[handler])
    logging.captureWarnings(True)
    if level.upper() != "DEBUG":
        logging.getLogger("alembic").setLevel(logging.WARNING)
    return handler


@contextlib.contextmanager
def held() -> Iterator[None]:
    """Keep the records logged meanwhile from the root logger's handlers, and hand them over at
    the end, formatted by whatever formatters those handlers have by then."""
    root = logging.getLogger()
    handlers = list(root.handlers)
    buffer = MemoryHandler(capacity=sys.maxsize, flushLevel=logging.CRITICAL + 1)
    for handler in handlers:
        root.removeHandler(handler)
    root.addHandler(buffer)
    try:
        yield
    finally:
        root.removeHandler(buffer)
        for handler in handlers:
            root.addHandler(handler)
        for record in buffer.buffer:
            for handler in handlers:
                if record.levelno >= handler.level:
                    handler.handle(record)
        buffer.buffer.clear()
        buffer.close()
