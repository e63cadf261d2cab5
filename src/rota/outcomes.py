"""What a handler raises to decide its attempt's outcome itself, instead of the retry policy.

They are exceptions so that they work from any depth of the handler's own calls; they are not
``RotaError``s, because they report no error of rota's.
"""

from __future__ import annotations

from datetime import timedelta


class Outcome(Exception):
    """Base of the outcome signals a handler may raise."""


class Retry(Outcome):
    """This attempt failed: retry after ``delay`` seconds (else the task's back-off), within the
    task's ``retries``."""

    def __init__(self, delay: float | timedelta | None = None) -> None:
        super().__init__(f"retry requested (delay {delay})")
        self.delay = delay


class Snooze(Outcome):
    """Not a failure: run again after ``delay`` seconds without spending an attempt (at most
    ``max_snoozes`` times per job)."""

    def __init__(self, delay: float | timedelta) -> None:
        super().__init__(f"snoozed for {delay}")
        self.delay = delay


class Fail(Outcome):
    """Fail now with ``message`` and code ``FAILED_BY_HANDLER``; never retried."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message
