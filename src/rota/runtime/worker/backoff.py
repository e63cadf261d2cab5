"""How a worker loop carries on after an error: log it, wait longer each time, and say so when
calls work again.

A database error is expected now and then (a restart, a lost connection) and is logged as a
warning; anything else is a bug or a bad row, logged as an error with its traceback.  Either
way the loop goes on: a worker whose loop ended would look alive and do nothing.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from rota.core.backoff import doubling
from rota.core.events import EventName
from rota.errors import StoreError
from rota.observe.events import EventLog

FIRST_DELAY = 0.2
logger = logging.getLogger("rota.worker")


@dataclass
class LoopBackoff:
    """Consecutive errors of one loop; a success resets them."""

    loop_name: str
    limit: float
    events: EventLog
    failures: int = 0

    def failed(self, error: Exception) -> float:
        """Log the error; return the pause before the loop's next try."""
        self.failures += 1
        delay = doubling(FIRST_DELAY, self.limit, self.failures)
        if not isinstance(error, StoreError):
            self.events.log(
                logger,
                EventName.WORKER_LOOP_ERROR,
                logging.ERROR,
                "unexpected error in %s loop (%s: %s); retrying in %.1f s",
                self.loop_name,
                type(error).__name__,
                error,
                delay,
                exc_info=error,
                error_type=type(error).__name__,
            )
            return delay
        self.events.log(
            logger,
            EventName.WORKER_DB_ERROR,
            logging.WARNING,
            "database error in %s loop (%s: %s); retrying in %.1f s",
            self.loop_name,
            error.code,
            error,
            delay,
            error_code=error.code,
        )
        return delay

    def succeeded(self) -> None:
        if self.failures:
            self.events.log(
                logger,
                EventName.WORKER_DB_RECOVERED,
                logging.INFO,
                "database calls of the %s loop work again after %d failure(s)",
                self.loop_name,
                self.failures,
            )
            self.failures = 0
