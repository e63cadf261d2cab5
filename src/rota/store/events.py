"""How the store announces what it meets (a lost connection, a read-only server, a row it cannot
read, a newer schema) without importing the event log, which belongs to a layer above it.

A store is given an ``EventSink``: a ``Rota`` passes its ``EventLog.log``, so these events reach
hooks too; a store opened on its own (``rota migrate``, tools, tests) logs them with
``log_event``.  ``log_event`` is also what the event log itself logs with: it is the one place
in rota that makes a log record carrying ``event``.
"""

from __future__ import annotations

import logging
from typing import Any, Protocol

from rota.core.events import EventName


class EventSink(Protocol):
    """Announce ``event``: a record on ``logger`` at ``level``, worded ``message % args``, with
    ``fields`` as its attributes."""

    def __call__(
        self,
        logger: logging.Logger,
        event: EventName,
        level: int,
        message: str,
        *args: object,
        exc_info: BaseException | None = None,
        **fields: Any,
    ) -> None: ...


def log_event(
    logger: logging.Logger,
    event: EventName,
    level: int,
    message: str,
    *args: object,
    exc_info: BaseException | None = None,
    **fields: Any,
) -> None:
    """The record of ``event`` (an ``EventSink``): its name in ``event``, ``fields`` as
    attributes for structured handlers.

    The record is made here, not by ``logger.log``: that one walks the stack for the caller's
    file and line, which for an event is always this function, at a cost a worker paid twice a
    job (issue 33). The record names ``rota`` as its file instead."""
    if not logger.isEnabledFor(level):
        return
    extra = {**fields, "event": (event if isinstance(event, EventName) else EventName(event)).value}
    error = (type(exc_info), exc_info, exc_info.__traceback__) if exc_info is not None else None
    record = logger.makeRecord(logger.name, level, "rota", 0, message, args, error, extra=extra)
    logger.handle(record)
