"""Stuck jobs: running, their lease renewed, yet running far longer than their task allows.

A worker that dies stops renewing its leases, and the rescue takes its jobs back.  A worker
that lives while one of its handlers hangs (a sync thread that ignores its timeout's interrupt,
a network read with no timeout of its own, a deadlock) keeps renewing the lease of that job for
ever: nothing fails, nothing is rescued, and a schedule whose ``overlap`` is ``skip`` quietly
skips every tick behind it.  So a running attempt is *stuck* once it has run past the moment
its task gives it, and ``job.stuck`` says so once per attempt (the store marks the attempt
with a compare-and-set, so one announcement however many workers look); the dashboard and
``rota check`` show it while that attempt runs.

The moment is the task's ``stuck_after`` when it sets one (the task knows how long a healthy
run takes), else its ``timeout`` plus ``STUCK_MARGIN`` (the worker interrupts at the timeout;
an attempt still running well after it did not stop when told), else none: a task without
either may run for as long as it likes.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta

from rota.core.model import JobRef

STUCK_MARGIN = 60.0
"""Seconds past its task's ``timeout`` that an attempt still running is stuck: time for the
interrupted handler to stop and for its outcome to be written, with room for a slow database."""


@dataclass(frozen=True, slots=True)
class RunningJob:
    """A running attempt, as the look for stuck jobs and its readers see it."""

    id: int
    task: str
    queue: str
    attempt: int
    started_at: datetime
    schedule: str | None = None
    lease_owner: str | None = None
    """The worker that runs it (and renews its lease)."""

    @property
    def ref(self) -> JobRef:
        """What its announcement names (``observe.events``)."""
        return JobRef(self.id, self.task, self.queue, self.attempt, self.schedule)

    def running_for(self, now: datetime) -> float:
        """Seconds since this attempt started."""
        return (now - self.started_at).total_seconds()


def stuck_limit(timeout: float | None, stuck_after: float | None) -> float | None:
    """Seconds an attempt of a task with this ``timeout`` and ``stuck_after`` may run before it
    is stuck; ``None``: never."""
    if stuck_after is not None:
        return stuck_after
    if timeout is not None:
        return timeout + STUCK_MARGIN
    return None


def overdue(
    running: Iterable[RunningJob], limits: Mapping[str, float], now: datetime
) -> list[RunningJob]:
    """The attempts among ``running`` that have run longer than their task's limit (from
    ``stuck_limit``, by task name) at ``now``; a task without a limit is never stuck."""
    return [
        job
        for job in running
        if job.task in limits and job.started_at + timedelta(seconds=limits[job.task]) < now
    ]
