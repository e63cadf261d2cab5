"""Readiness: the database reached (and migrated) before a call's first read or write, waited
for while it is unreachable, and this process's clock kept on the server's time line.

A worker started before its database (a deploy, a failover, a host reboot) should come up on
its own once the database answers; a caller that gave a deadline gets ``DATABASE_UNAVAILABLE``
when it passes instead.  A refusal (wrong password, missing schema) is raised at once.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TypeVar

from rota.config import RotaConfig
from rota.core.backoff import doubling
from rota.core.clock import Clock
from rota.core.events import EventName
from rota.errors import DatabaseUnavailable, StoreError, TransientStoreError, unchained
from rota.observe.events import EventLog
from rota.runtime.timeline import TimeLine
from rota.store.base import Store

T = TypeVar("T")
logger = logging.getLogger("rota")
FIRST_DELAY = 0.2
MAX_DELAY = 10.0
CONNECT_READINGS = 3


@dataclass
class DatabaseWait:
    where: str
    """The database, described without its password."""
    timeout: float | None
    """Seconds before giving up; ``None`` waits for as long as it takes."""
    events: EventLog
    failures: int = 0
    monotonic: Callable[[], float] = time.monotonic
    """The clock the deadline is kept on, read when the wait begins and at each failure."""
    started: float = field(init=False)

    def __post_init__(self) -> None:
        self.started = self.monotonic()

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
        """Log the failed attempt and return the pause before the next one, or give up: a
        pause is cut short at the deadline, so the last attempt is made there, and the error
        says how long the wait really took (that attempt's own time included)."""
        self.failures += 1
        delay = doubling(FIRST_DELAY, MAX_DELAY, self.failures)
        waited = self.monotonic() - self.started
        if self.timeout is not None:
            if waited >= self.timeout:
                # Unchained, as every error of connecting is (``store.dialects.translation``).
                unchained(
                    DatabaseUnavailable(
                        f"cannot reach the {self.where} after {waited:.1f} s: {error}"
                    )
                )
            delay = min(delay, self.timeout - waited)
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
                self.monotonic() - self.started,
                attempts=self.failures + 1,
            )


class Readiness:
    def __init__(
        self, store: Store, config: RotaConfig, clock: Clock, events: EventLog, where: str
    ) -> None:
        """``where`` describes the database in messages, without its password."""
        self.store = store
        self.config = config
        self.events = events
        self.where = where
        self.timeline = TimeLine(store, clock, events)
        self._ready = False
        self._lock = threading.Lock()

    def ensure_ready(self) -> None:
        """Connect, retrying while unreachable until ``connect_timeout``; migrate if enabled;
        keep the clock on the server's time line (``runtime.timeline``)."""
        if not self._ready:
            self.wait(self.config.connect_timeout, self.connect_once)
        elif self.timeline.stale():
            self._measure()

    def wait(
        self,
        timeout: float | None,
        attempt: Callable[[], T],
        stop: threading.Event | None = None,
    ) -> T:
        """``attempt`` retried while the database is unreachable (``DatabaseWait``)."""
        return DatabaseWait(self.where, timeout, self.events).retry(attempt, stop)

    def connect_once(self) -> None:
        with self._lock:
            if self._ready:
                return
            logger.debug("connected to %s", self.store.connect())
            if self.config.auto_migrate:
                self.store.migrate()
            else:
                self.store.require_schema()
            self._measure()
            self._ready = True

    def _measure(self) -> None:
        """Anchor the clock to the server's, from the best of a few readings (the first
        statements on a new connection can be slow); a failed reading keeps the last one."""
        with contextlib.suppress(StoreError):
            self.timeline.measure(readings=CONNECT_READINGS)
