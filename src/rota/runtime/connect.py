"""Waiting for the database at start: doubling delays, one clear log line per attempt.

A worker started before its database (a deploy, a failover, a host reboot) should come up on
its own once the database answers; a caller that gave a deadline gets ``DATABASE_UNAVAILABLE``
when it passes instead.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field

from rota.errors import DatabaseUnavailable, StoreError

logger = logging.getLogger("rota")
FIRST_DELAY = 0.2
MAX_DELAY = 10.0


@dataclass
class DatabaseWait:
    where: str
    """The database, described without its password."""
    timeout: float | None
    """Seconds before giving up; ``None`` waits for as long as it takes."""
    failures: int = 0
    delay: float = FIRST_DELAY
    started: float = field(default_factory=time.monotonic)

    def failed(self, error: StoreError) -> float:
        """Log the failed attempt and return the pause before the next one, or give up."""
        self.failures += 1
        waited = time.monotonic() - self.started
        if self.timeout is not None and waited + self.delay > self.timeout:
            raise DatabaseUnavailable(
                f"cannot reach the {self.where} after {self.timeout} s: {error}"
            ) from error
        delay, self.delay = self.delay, min(self.delay * 2, MAX_DELAY)
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
