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
    attributes for structured handlers."""
    extra = {**fields, "event": EventName(event).value}
    logger.log(level, message, *args, exc_info=exc_info, extra=extra)
