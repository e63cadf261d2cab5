"""When a failed attempt runs again: exponential back-off from a base delay, capped and jittered;
and which failures run again at all (``retry_on`` / ``no_retry_on``)."""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass

from rota.errors import RotaError

ExceptionTypes = tuple[type[BaseException], ...]


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
    retry_on: ExceptionTypes | None = None
    """Retry only exceptions of these types (``None``: every type)."""
    no_retry_on: ExceptionTypes = ()
    """Fail at once on exceptions of these types, even ones ``retry_on`` names."""
    max_snoozes: int | None = None
    """How many times a job may ``Snooze``; ``None``: no limit here (the executor fills in the
    ``Rota``'s ``max_snoozes``, so a limit always applies to a running job)."""

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

    def retries_error(self, lineage: Sequence[str]) -> bool:
        """Whether a failure of the handler is worth another attempt, by the exception's classes
        (``lineage``: the qualified names of its type's MRO).

        Names, not ``isinstance``, so that an exception raised in an isolated child process,
        which crosses back as its record, is judged the same as one raised in a thread.
        """
        if any(qualified(kind) in lineage for kind in self.no_retry_on):
            return False
        return self.retry_on is None or any(qualified(kind) in lineage for kind in self.retry_on)


def exception_types(given: object, error: type[RotaError], name: str) -> ExceptionTypes:
    """``retry_on`` / ``no_retry_on`` as a tuple of exception classes (one class alone counts
    as a tuple of one); anything else is ``error`` naming the option."""
    kinds = (given,) if isinstance(given, type) else given
    if not isinstance(kinds, (tuple, list, set, frozenset)):
        raise error(f"{name} must be a tuple of exception classes, got {given!r}")
    for kind in kinds:
        if not isinstance(kind, type) or not issubclass(kind, BaseException):
            raise error(f"{name} must hold exception classes only, got {kind!r}")
    return tuple(kinds)


def qualified(kind: type) -> str:
    """``module.QualName`` of a class, as errors record a type."""
    return f"{kind.__module__}.{kind.__qualname__}"


def lineage(error: BaseException) -> list[str]:
    """The qualified names of ``error``'s type and its bases, most derived first; for an
    exception rebuilt from another process's record, the original's (its ``lineage``)."""
    recorded = getattr(error, "lineage", None)
    if isinstance(recorded, tuple) and recorded:
        return list(recorded)
    return [qualified(kind) for kind in type(error).__mro__]


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
