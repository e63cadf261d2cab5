"""When a failed attempt runs again: exponential back-off from a base delay, capped and jittered."""

from __future__ import annotations

import random
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """``retries`` is how many times a failed job runs again, so it runs at most retries + 1 times.

    The delay before retry *n* is ``delay * 2 ** (n - 1)`` capped at ``cap``, then shortened by up
    to ``jitter`` of itself so that jobs failing together do not retry together.
    """

    retries: int = 3
    delay: float = 10.0
    cap: float = 3600.0
    jitter: float = 0.25

    def __post_init__(self) -> None:
        if self.retries < 0:
            raise ValueError(f"retries must be >= 0, got {self.retries}")
        if self.delay < 0 or self.cap < 0:
            raise ValueError("retry delay and cap must be >= 0")
        if not 0 <= self.jitter <= 1:
            raise ValueError(f"jitter must be within [0, 1], got {self.jitter}")

    @property
    def max_attempts(self) -> int:
        return self.retries + 1


def doubling(first: float, limit: float, failures: int) -> float:
    """``first`` after the first failure, doubled after each further one, at most ``limit``.

    The one back-off of rota: job retries, database errors in the worker's loops, waiting for
    an unreachable database, and repeating a transaction after a deadlock all use it.
    """
    exponent = min(max(failures - 1, 0), 1000)
    return float(min(limit, first * 2.0**exponent))


def retry_delay(policy: RetryPolicy, attempt: int, rng: random.Random) -> float:
    """Seconds to wait after failed attempt ``attempt`` (1-based) before the next one."""
    return doubling(policy.delay, policy.cap, attempt) * (1.0 - policy.jitter * rng.random())
