"""``StuckStore``: running attempts that run past their task's limit (``rota.core.stuck``)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Protocol

from rota.core.stuck import RunningJob


class StuckStore(Protocol):
    def running(
        self, tasks: Sequence[str], started_before: datetime, now: datetime, limit: int
    ) -> list[RunningJob]:
        """Up to ``limit`` running jobs of ``tasks`` in this namespace, oldest started first,
        whose attempt started before ``started_before``, whose lease has not expired at ``now``
        (an expired one is the rescue's) and whose attempt is not marked stuck yet: what the
        look for stuck jobs decides on."""
        ...

    def mark(self, jobs: Sequence[RunningJob]) -> list[RunningJob]:
        """Mark each of ``jobs`` stuck in its attempt, each a compare-and-set that applies only
        while the job still runs that attempt unmarked, and return those it marked: a job
        another worker marked first, or that ended or moved on to another attempt meanwhile,
        is left out, so each attempt is announced once."""
        ...

    def marked(self, limit: int) -> list[RunningJob]:
        """Up to ``limit`` running jobs of this namespace whose current attempt is marked stuck,
        oldest started first: what ``rota check`` and the dashboard show."""
        ...
