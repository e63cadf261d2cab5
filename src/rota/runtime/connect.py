"""Waiting for the database at start-up and in the calls.

A worker started before its database (a deploy, a failover, a host reboot) should come up on
its own once the database answers; a caller that gave a deadline gets ``DATABASE_UNAVAILABLE``
when it passes instead.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TypeVar

from rota.core.backoff import doubling
from rota.core.events import EventName
from rota.errors import DatabaseUnavailable, StoreError, TransientStoreError, unchained
from rota.observe.events import EventLog

T = TypeVar("T")
logger = logging.getLogger("rota")
FIRST_DELAY = 0.2
MAX_DELAY = 10.0


@dataclass
class DatabaseWait:
    where: str
    """The database, described without its password."""
    timeout: float | None
    """Seconds before giving up; ``None`` waits for as long as it takes."""
    events: EventLog
    failures: int = 0
    started: float = field(default_factory=time.monotonic)

    def retry(self, attempt: Callable[[], T], stop: threading.Event | None = None) -> T:
        """Call ``attempt`` until it gets through, pausing after each ``TransientStoreError``:
        the one loop that waits for the database.  Any other error is raised at once.  Setting
        ``stop`` ends a pause early and raises the last error (an async caller cancelled while
        this runs in a thread sets it, so the thread does not outlive the wait)."""
        stop = stop or threading.Event()
        while True:
            try:
                result = attempt()
            except TransientStoreError as error:
                if stop.wait(self.failed(error)):
                    raise
            else:
                self.succeeded()
                return result

    def failed(self, error: StoreError) -> float:
        """Log the failed attempt and return the pause before the next one, or give up."""
        self.failures += 1
        delay = doubling(FIRST_DELAY, MAX_DELAY, self.failures)
        waited = time.monotonic() - self.started
        if self.timeout is not None and waited + delay > self.timeout:
            # Unchained, as every error of connecting is (``store.dialects.translation``).
            unchained(
                DatabaseUnavailable(
                    f"cannot reach the {self.where} after {self.timeout} s: {error}"
                )
            )
        self.events.log(
            logger,
            EventName.DB_UNAVAILABLE,
            logging.WARNING,
            "cannot reach the %s (%s); retrying in %.1f s",
            self.where,
            error,
            delay,
            attempt=self.failures,
        )
        return delay

    def succeeded(self) -> None:
        if self.failures:
            self.events.log(
                logger,
                EventName.DB_AVAILABLE,
                logging.INFO,
                "reached the %s after %d failed attempt(s) in %.1f s",
                self.where,
                self.failures,
                time.monotonic() - self.started,
                attempts=self.failures + 1,
            )
