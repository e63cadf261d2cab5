"""How ``rota worker`` and ``rota.run()`` log: every record on stderr, one line each, as text or
as JSON objects.  ``rota.run()`` leaves an application that configured logging itself alone.

What a record says may come from outside (an error message, a name or an argument read from the
database): neither format lets it write a line of its own, nor a character that acts on the
terminal the log is read in (``rota.core.escaping``).

The application's ``Rota(log_format=...)`` is known only once its module is imported, and that
import may log already; ``held`` keeps those records until the format is chosen, so that with
``json`` every line a worker writes is one JSON object, from its first line on.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import sys
import textwrap
import time
from collections.abc import Iterator
from datetime import datetime, timezone
from logging.handlers import MemoryHandler
from typing import Any

from rota.core.escaping import visible, visible_json
from rota.environment import LOG_FORMAT_VARIABLE
from rota.errors import ConfigError

LOG_FORMATS = ("text", "json")
# A record whose message only repeats its fields in text (``EventLog``'s) carries this attribute.
RENDERED = "rota_rendered"
STANDARD = frozenset(set(vars(logging.makeLogRecord({}))) | {"message", "asctime", RENDERED})
TEXT = "%(asctime)s %(levelname)-7s %(name)s: %(message)s"
INDENT = "  "
"""Before each line of a traceback in a text log, so that only a record starts at the margin."""


class TextLines(logging.Formatter):
    """``TEXT``, one line a record: a newline, CR or any other control character in the message
    or a field is escaped (``\\n``), so that an error message cannot forge a record.

    A traceback (``exc_info``, ``stack_info``) keeps its lines, as Python's logging writes it:
    squeezed into one it could not be read. Its last line holds the exception's message,
    untrusted like any other, so every other control character in it is escaped too, and each
    of its lines is indented: a line that starts at the margin always starts a record, for the
    reader and for a log shipper that joins continuation lines.
    """

    def __init__(self) -> None:
        super().__init__(TEXT)
        self._second: tuple[int, str] = (-1, "")

    def formatTime(self, record: logging.LogRecord, datefmt: str | None = None) -> str:
        """logging's own time, its seconds formatted once a second rather than once a record."""
        if datefmt is not None:
            return super().formatTime(record, datefmt)
        second = int(record.created)
        if second != self._second[0]:
            self._second = (second, time.strftime("%Y-%m-%d %H:%M:%S", self.converter(second)))
        return f"{self._second[1]},{int(record.msecs):03d}"

    def format(self, record: logging.LogRecord) -> str:
        record.message = record.getMessage()
        record.asctime = self.formatTime(record, self.datefmt)
        text = visible(self.formatMessage(record))
        exception = self.formatException(record.exc_info) if record.exc_info else record.exc_text
        stack = self.formatStack(record.stack_info) if record.stack_info else None
        for block in (exception, stack):
            if block:
                text += "\n" + textwrap.indent(visible(block, newlines=True), INDENT)
        return text


class JsonLines(logging.Formatter):
    """Every record as one JSON object; rota's event fields become keys of their own. A newline
    in a value is ``\\n`` in JSON anyway; the characters JSON leaves raw that act on a terminal
    are written as ``\\u`` escapes too (``visible_json``)."""

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
        return visible_json(json.dumps(data, default=str, ensure_ascii=False))


def chosen_format(given: str | None) -> str:
    """``log_format`` as given, else ``$ROTA_LOG_FORMAT``, else text; a bad one is refused,
    naming the variable when it came from there."""
    if given is not None:
        if given not in LOG_FORMATS:
            raise ConfigError(f"log_format must be one of {LOG_FORMATS}, got {given!r}")
        return given
    variable = os.environ.get(LOG_FORMAT_VARIABLE, "").strip() or "text"
    if variable not in LOG_FORMATS:
        raise ConfigError(f"${LOG_FORMAT_VARIABLE} must be text or json, got {variable!r}")
    return variable


def formatter(log_format: str) -> logging.Formatter:
    return JsonLines() if log_format == "json" else TextLines()


def configure_logging(level: str, log_format: str = "text") -> logging.Handler:
    """Send the records of every logger (rota's, handlers', the application's, warnings) to
    stderr; return the handler, whose formatter the caller may still change."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(formatter(log_format))
    logging.basicConfig(level=getattr(logging, level.upper()), handlers=[handler])
    logging.captureWarnings(True)
    return handler


def configure_unless_configured(log_format: str) -> None:
    """Log as ``rota worker`` does, at INFO, unless the root logger has a handler already: the
    application chose where its records go, and a second handler would write each one twice."""
    if not logging.getLogger().handlers:
        configure_logging("info", log_format)


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
