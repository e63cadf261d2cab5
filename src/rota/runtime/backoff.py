"""How a worker loop carries on after a database error: log it, wait longer each time, and say
so when calls work again."""

from __future__ import annotations

import logging
from dataclasses import dataclass

from rota.core.backoff import doubling
from rota.errors import StoreError

FIRST_DELAY = 0.2
logger = logging.getLogger("rota.worker")


@dataclass
class LoopBackoff:
    """Consecutive database errors of one loop; a success resets them."""

    loop_name: str
    limit: float
    failures: int = 0

    def failed(self, error: StoreError) -> float:
        """Log the error; return the pause before the loop's next try."""
        self.failures += 1
        delay = doubling(FIRST_DELAY, self.limit, self.failures)
        logger.warning(
            "database error in %s loop (%s: %s); retrying in %.1f s",
            self.loop_name,
            error.code,
            error,
            delay,
            extra={"event": "worker.db_error", "error_code": error.code},
        )
        return delay

    def succeeded(self) -> None:
        if self.failures:
            logger.info(
                "database calls of the %s loop work again after %d failure(s)",
                self.loop_name,
                self.failures,
                extra={"event": "worker.db_recovered"},
            )
            self.failures = 0
