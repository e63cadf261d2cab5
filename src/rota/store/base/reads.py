"""What tools and the dashboard read: one job, listings without payloads, counts per period,
and the pending jobs no live worker can take."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Protocol

from rota.core.model import Job, JobState, JobStatus
from rota.core.stranded import Stranded
from rota.store.values import JobSummary

DEPENDENTS_LISTED = 100
"""Dependents a job's page lists (``rota job``, the dashboard); a fan-out may be far larger."""


class ReadStore(Protocol):
    """``store.reads``: reads only, none of them locking a row a worker needs."""

    def job(self, job_id: int) -> Job | None:
        """The job with its ``depends_on``; ``None`` when there is no such job."""
        ...

    def job_state(self, job_id: int) -> JobState | None:
        """The job's state as ``job`` shows it (a pending job of a paused queue is ``paused``);
        ``None`` when there is no such job.  One short read of neither its arguments nor its
        result nor its errors, for ``rota.result`` waiters that poll an unfinished job."""
        ...

    def dependents(self, job_id: int, limit: int = DEPENDENTS_LISTED) -> list[int]:
        """Ids of the jobs that depend on ``job_id`` (at most ``limit``, lowest first)."""
        ...

    def jobs(
        self,
        states: Sequence[JobState] = (),
        task: str | None = None,
        queue: str | None = None,
        limit: int | None = 100,
    ) -> list[Job]:
        """Newest first; ``limit=None`` lists them all."""
        ...

    def live(self, limit: int | None = None) -> list[JobStatus]:
        """The pending, paused and running jobs as ``Rota.jobs()`` lists them, newest first (the
        newest ``limit``; ``None``: all), a pending job of a paused queue shown ``paused``.
        Read from the columns a line shows only: a backlog of thousands is listed in one query
        whose cost is the driver's decoding of its rows."""
        ...

    def summaries(
        self,
        states: Sequence[JobState] = (),
        task: str | None = None,
        queue: str | None = None,
        limit: int | None = 100,
        offset: int = 0,
        job_id: int | None = None,
    ) -> list[JobSummary]:
        """``jobs`` without their arguments, newest first, skipping the ``offset`` newest that
        match; ``job_id`` keeps only that job.  For listings, whose memory must not grow with
        the jobs' payloads."""
        ...

    def last_scheduled(self) -> dict[str, JobSummary]:
        """The newest job (by id) each schedule enqueued, by schedule name, in one query."""
        ...

    def finished_per_period(self, bounds: Sequence[datetime]) -> dict[str, list[int]]:
        """How many jobs reached each final state in each period between consecutive
        ``bounds`` (ascending): ``{state: [n, ...]}`` with ``len(bounds) - 1`` counts for
        every final state, a job finished at ``t`` counting where ``bounds[i] <= t <
        bounds[i + 1]``.  Counted by the database in one query, from the hour tallies for a
        period's whole hours before the fold's mark and from the ``finished_at`` index for the
        rest, so its cost in memory is the same for any number or size of jobs."""
        ...

    def waiting_queues(self) -> set[str]:
        """Queues that hold pending or paused jobs."""
        ...

    def stranded(self, alive_at: datetime) -> list[Stranded]:
        """Pending jobs that none of the workers live at ``alive_at`` can claim, counted by
        task and queue (sorted so), each with the reason."""
        ...
