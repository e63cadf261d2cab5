"""What inspection asks of the jobs table: one job, a list, exact counts, waiting queues and
the pending jobs by task and queue, each answered by the database in one query."""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy import func, select

from rota.core.model import MAX_JOB_ID, Counts, Job, JobState
from rota.store.database import Database
from rota.store.rows import WAITING, to_job


class SqlReads:
    def __init__(self, database: Database) -> None:
        self.database = database
        self.table = database.schema.jobs

    def job(self, job_id: int) -> Job | None:
        if not 0 < job_id <= MAX_JOB_ID:
            return None
        rows = self.database.fetch(select(self.table).where(self.table.c.id == job_id))
        return to_job(rows[0]._mapping) if rows else None

    def jobs(
        self,
        states: Sequence[JobState] = (),
        task: str | None = None,
        queue: str | None = None,
        limit: int | None = 100,
    ) -> list[Job]:
        table = self.table
        query = select(table).order_by(table.c.id.desc()).limit(limit)
        if states:
            query = query.where(table.c.state.in_([state.value for state in states]))
        if task is not None:
            query = query.where(table.c.task == task)
        if queue is not None:
            query = query.where(table.c.queue == queue)
        return [to_job(row._mapping) for row in self.database.fetch(query)]

    def counts(self) -> Counts:
        """Jobs per state, queue and task, counted by the database in one GROUP BY."""
        jobs = self.table
        columns = (jobs.c.state, jobs.c.queue, jobs.c.task)
        rows = self.database.fetch(select(*columns, func.count()).group_by(*columns))
        return Counts.from_rows((state, queue, task, int(n)) for state, queue, task, n in rows)

    def waiting_queues(self) -> set[str]:
        """Queues with pending or paused jobs, read from the claim index."""
        jobs = self.table
        query = select(jobs.c.queue).where(jobs.c.state.in_(WAITING)).distinct()
        return {queue for (queue,) in self.database.fetch(query)}

    def pending_by_task_and_queue(self) -> list[tuple[str, str, int]]:
        jobs = self.table
        query = (
            select(jobs.c.task, jobs.c.queue, func.count())
            .where(jobs.c.state == JobState.PENDING.value)
            .group_by(jobs.c.task, jobs.c.queue)
        )
        return [(task, queue, int(count)) for task, queue, count in self.database.fetch(query)]
