"""What inspection asks of the jobs table: one job, its state alone, a list, waiting queues and
the pending jobs by task and queue, each answered by the database in one query.

Listings and charts read summaries and aggregates, never the ``payload`` column: a page's
memory must not depend on how large the jobs' arguments are.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import replace
from datetime import datetime
from typing import Any

from sqlalchemy import Select, func, select
from sqlalchemy.engine import Connection

from rota.core.model import (
    LIVE_STATES,
    MAX_JOB_ID,
    Job,
    JobState,
    JobStatus,
    seen_state,
)
from rota.core.stranded import Stranded
from rota.store.base import DEPENDENTS_LISTED
from rota.store.cluster import SqlCluster, paused_names
from rota.store.database import Database
from rota.store.dependencies import SqlDependencies
from rota.store.rows import RUNNING, UNSTARTED, _attempt_errors, _progress, in_states, to_job
from rota.store.tags import JobTags
from rota.store.values import JobSummary
from rota.store.windows import FinishedWindows

SUMMARY = [
    *("id", "task", "queue", "state", "attempt", "max_attempts", "run_at", "finished_at"),
    *("started_at", "schedule", "lease_owner", "errors", "progress", "progress_note"),
]
"""The columns a ``JobSummary`` is made of: never ``payload``."""
LIVE_COLUMNS = [
    *("id", "task", "queue", "state", "attempt", "run_at", "started_at", "errors", "progress"),
    "progress_note",
]
"""The columns a line of ``Rota.jobs()`` is made of: fewer than a summary's, as it lists every
live job."""
PENDING, PAUSED = UNSTARTED


class SqlReads:
    def __init__(self, database: Database, cluster: SqlCluster) -> None:
        self.database = database
        self.cluster = cluster
        self.table = database.schema.jobs
        self.dependencies = SqlDependencies(database)
        self.windows = FinishedWindows(database)
        self.tags = JobTags(database)

    def job(self, job_id: int) -> Job | None:
        """The row, and its dependencies (in the same transaction) if it has any; pending in a
        paused queue, it reads ``paused``."""
        if not 0 < job_id <= MAX_JOB_ID:
            return None

        def work(connection: Connection) -> Job | None:
            row = connection.execute(select(self.table).where(self.table.c.id == job_id)).first()
            if row is None:
                return None
            job = to_job(row._mapping)
            tags = self.tags.of(connection, [job_id]).get(job_id)
            if tags:
                job = replace(job, tags=tags)
            if job.state is JobState.PENDING:
                paused_query = paused_names(self.database, job.namespace)
                paused = set(connection.execute(paused_query).scalars())
                job = replace(job, state=seen_state(job.state, job.queue, paused))
            if not row.has_dependencies:
                return job
            return replace(job, depends_on=self.dependencies.depends_on(connection, job_id))

        return self.database.transaction(work)

    def job_state(self, job_id: int) -> JobState | None:
        """The state alone, and whether the job's queue is paused, in one statement."""
        if not 0 < job_id <= MAX_JOB_ID:
            return None
        jobs = self.table
        paused = jobs.c.queue.in_(paused_names(self.database, jobs.c.namespace))
        query = select(jobs.c.state, jobs.c.queue, paused).where(jobs.c.id == job_id)
        for state, queue, in_paused_queue in self.database.fetch(query):
            return seen_state(JobState.stored(state), queue, [queue] if in_paused_queue else [])
        return None

    def dependents(self, job_id: int, limit: int = DEPENDENTS_LISTED) -> list[int]:
        if not 0 < job_id <= MAX_JOB_ID:
            return []
        return self.database.transaction(
            lambda connection: self.dependencies.dependents(connection, job_id, limit)
        )

    def jobs(
        self,
        states: Sequence[JobState] = (),
        task: str | None = None,
        queue: str | None = None,
        limit: int | None = 100,
    ) -> list[Job]:
        query = self._newest(select(self.table), states, task, queue, limit)
        return [to_job(row._mapping) for row in self.database.fetch(query)]

    def summaries(
        self,
        states: Sequence[JobState] = (),
        task: str | None = None,
        queue: str | None = None,
        limit: int | None = 100,
        offset: int = 0,
        job_id: int | None = None,
    ) -> list[JobSummary]:
        query = self._newest(self._summary_select(), states, task, queue, limit).offset(offset)
        if job_id is not None:
            query = query.where(self.table.c.id == job_id)
        return [to_summary(row) for row in self.database.fetch(query)]

    def live(self, limit: int | None = None) -> list[JobStatus]:
        """The paused queues are read only when a pending job is listed."""
        columns = select(*(self.table.c[name] for name in LIVE_COLUMNS))
        rows = self.database.fetch(self._newest(columns, LIVE_STATES, None, None, limit))
        waiting = any(row.state == PENDING for row in rows)
        paused = self.cluster.paused_queues() if waiting else set()
        return [to_status(row, paused) for row in rows]

    def last_scheduled(self) -> dict[str, JobSummary]:
        """One query: the rows whose id is the largest of their schedule."""
        jobs = self.table
        newest = select(func.max(jobs.c.id)).where(
            self.database.mine(jobs), jobs.c.schedule.is_not(None)
        )
        query = self._summary_select().where(jobs.c.id.in_(newest.group_by(jobs.c.schedule)))
        summaries = (to_summary(row) for row in self.database.fetch(query))
        return {summary.schedule: summary for summary in summaries if summary.schedule}

    def finished_per_period(self, bounds: Sequence[datetime]) -> dict[str, list[int]]:
        """From the hour tallies and the finished index beside them (``store.windows``)."""
        return self.windows.per_period(bounds)

    def _summary_select(self) -> Select[Any]:
        return select(*(self.table.c[name] for name in SUMMARY))

    def _newest(
        self,
        query: Select[Any],
        states: Sequence[JobState],
        task: str | None,
        queue: str | None,
        limit: int | None,
    ) -> Select[Any]:
        """``query`` newest first, filtered as the listings filter."""
        table = self.table
        newest = table.c.id.desc()
        if states and not any(state.is_final for state in states):
            # Live jobs are few beside the history: found through the claim index, then sorted.
            # Ordered by the key itself, MySQL and MariaDB walk the primary key backwards
            # through every finished job to find them.
            newest = (table.c.id + 0).desc()
        query = query.where(self.database.mine(table)).order_by(newest).limit(limit)
        if states:
            query = query.where(in_states(table.c.state, states))
        if task is not None:
            query = query.where(table.c.task == task)
        if queue is not None:
            query = query.where(table.c.queue == queue)
        return query

    def waiting_queues(self) -> set[str]:
        """Queues with pending or paused jobs, read from the claim index."""
        jobs = self.table
        waiting = (self.database.mine(jobs), jobs.c.state.in_(UNSTARTED))
        query = select(jobs.c.queue).where(*waiting).distinct()
        return {queue for (queue,) in self.database.fetch(query)}

    def stranded(self, alive_at: datetime) -> list[Stranded]:
        workers = self.cluster.workers(alive_at)
        return Stranded.among(self.pending_by_task_and_queue(), workers)

    def pending_by_task_and_queue(self) -> list[tuple[str, str, int]]:
        jobs = self.table
        query = (
            select(jobs.c.task, jobs.c.queue, func.count())
            .where(self.database.mine(jobs), jobs.c.state == JobState.PENDING.value)
            .group_by(jobs.c.task, jobs.c.queue)
        )
        return [(task, queue, int(count)) for task, queue, count in self.database.fetch(query)]


def to_summary(row: Sequence[Any]) -> JobSummary:
    """A row of ``SUMMARY`` columns, in their order (unpacked, not looked up by name: listings
    decode thousands); an unreadable ``errors`` column leaves no last error (the job's own
    page, reading the whole row, says why), a state rota does not know is ``UNKNOWN`` with its
    text kept."""
    (job_id, task, queue, stored, attempt, max_attempts, run_at, finished_at) = row[:8]
    (started_at, schedule, lease_owner, errors_text, progress, progress_note) = row[8:]
    errors = _attempt_errors(errors_text, [])
    state = JobState.stored(stored)
    return JobSummary(
        id=job_id,
        task=task,
        queue=queue,
        state=state,
        attempt=attempt,
        max_attempts=max_attempts,
        run_at=run_at,
        finished_at=finished_at,
        schedule=schedule,
        lease_owner=lease_owner,
        last_error=errors[-1] if errors else None,
        progress=_progress(progress, progress_note),
        started_at=started_at,
        failures=len(errors),
        unknown_state=stored if state is JobState.UNKNOWN else None,
    )


def to_status(row: Sequence[Any], paused_queues: Collection[str]) -> JobStatus:
    """A row of ``LIVE_COLUMNS`` as its line of ``Rota.jobs()``: made straight from the row,
    without a ``JobSummary`` between, since a backlog of ten thousand is listed whole."""
    (job_id, task, queue, stored, attempt, run_at, started_at, errors, progress, note) = row
    pending = stored == PENDING
    return JobStatus(
        id=job_id,
        name=task,
        cron=None,
        status=PAUSED if pending and queue in paused_queues else stored,
        last_run=started_at,
        next_run=run_at if pending else None,
        runs=attempt,
        failures=len(_attempt_errors(errors, [])),
        progress=_progress(progress, note) if stored == RUNNING else None,
    )
