"""Start-up checks against the database: waiting for it, and comparing clocks with it.

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
from datetime import timedelta
from typing import TypeVar

from rota.core.backoff import doubling
from rota.core.clock import Clock, SystemClock, offset
from rota.errors import DatabaseUnavailable, StoreError, TransientStoreError, unchained
from rota.store.base import Store

T = TypeVar("T")
logger = logging.getLogger("rota")
FIRST_DELAY = 0.2
MAX_DELAY = 10.0
SKEW_WARNING = timedelta(seconds=5)


@dataclass
class DatabaseWait:
    where: str
    """The database, described without its password."""
    timeout: float | None
    """Seconds before giving up; ``None`` waits for as long as it takes."""
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
        logger.warning(
            "cannot reach the %s (%s); retrying in %.1f s",
            self.where,
            error,
            delay,
            extra={"event": "db.unavailable", "attempt": self.failures},
        )
        return delay

    def succeeded(self) -> None:
        if self.failures:
            logger.info(
                "reached the %s after %d failed attempt(s) in %.1f s",
                self.where,
                self.failures,
                time.monotonic() - self.started,
                extra={"event": "db.available", "attempts": self.failures + 1},
            )


def check_clock(store: Store, clock: Clock, lease_seconds: float) -> timedelta | None:
    """Warn when this host's clock and the database server's disagree by seconds.

    Leases and ticks are computed from each host's own clock. Cron stays one job per tick
    whatever the skew, but a worker whose clock runs ahead by more than two thirds of
    ``lease_seconds`` sees other workers' leases as expired and runs their jobs a second time.
    A fake or custom clock is meant to differ, so only the system clock is compared.
    """
    if not isinstance(clock, SystemClock):
        return None
    sent = clock.now()
    remote = store.server_time()
    received = clock.now()
    if remote is None:
        return None
    skew = -offset(sent, remote, received)
    if abs(skew) > SKEW_WARNING:
        logger.warning(
            "this host's clock is %.1f s %s the database server's; keep clocks in sync (NTP): "
            "beyond %.0f s ahead, a worker takes over jobs whose leases are still live",
            abs(skew.total_seconds()),
            "ahead of" if skew > timedelta(0) else "behind",
            lease_seconds * 2 / 3,
            extra={"event": "worker.clock_skew", "skew_seconds": skew.total_seconds()},
        )
    return skew
