"""What a handler raises to decide its attempt's outcome itself, instead of the retry policy.

They are exceptions so that they work from any depth of the handler's own calls; they are not
``RotaError``s, because they report no error of rota's.  A delay is checked when the signal is
made (a finite number of seconds, at least 0, or a ``timedelta``; ``InvalidArguments``
otherwise), so a mistaken one fails in the handler's own line, and is kept as seconds.
"""

from __future__ import annotations

from datetime import timedelta

from rota.core import checks
from rota.errors import InvalidArguments


class Outcome(Exception):
    """Base of the outcome signals a handler may raise."""


class Retry(Outcome):
    """This attempt failed: retry after ``delay`` seconds (else the task's back-off), within the
    task's ``retries``."""

    def __init__(self, delay: float | timedelta | None = None) -> None:
        self.delay = None if delay is None else _delay(delay, "Retry")
        super().__init__(
            "retry requested" + ("" if self.delay is None else f" in {self.delay:g} s")
        )


class Snooze(Outcome):
    """Not a failure: run again after ``delay`` seconds without spending an attempt (at most
    ``max_snoozes`` times per job)."""

    def __init__(self, delay: float | timedelta) -> None:
        self.delay = _delay(delay, "Snooze")
        super().__init__(f"snoozed for {self.delay:g} s")


class Fail(Outcome):
    """Fail now with ``message`` and code ``FAILED_BY_HANDLER``; never retried."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


def _delay(delay: object, signal: str) -> float:
    return checks.duration(delay, InvalidArguments, f"{signal} delay").total_seconds()
