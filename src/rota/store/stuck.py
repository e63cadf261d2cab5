"""Stuck jobs in the jobs table: ``stuck_attempt`` holds the attempt ``job.stuck`` was announced
for (``rota.core.stuck`` says which attempts are stuck, and why).

The mark is the attempt's number rather than a flag, so that a job's next attempt starts
unmarked without a write at its end, and ``Job.stuck`` is ``stuck_attempt = attempt`` while the
job runs (an attempt given back, by a release, a snooze or a durable sleep, runs again under
the same number: the claim clears the mark).  Marking is a compare-and-set per job on the
attempt the look read: when two workers look at once, or the job ends or moves on to its next
attempt in between, the row count says who marked what, and only that is announced.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import Select, and_, or_, select, update
from sqlalchemy.engine import Connection
from sqlalchemy.sql.elements import ColumnElement

from rota.core.stuck import RunningJob
from rota.store.database import Database
from rota.store.rows import RUNNING


class SqlStuck:
    def __init__(self, database: Database) -> None:
        self.database = database
        self.table = database.schema.jobs

    def running(
        self, tasks: Sequence[str], started_before: datetime, now: datetime, limit: int
    ) -> list[RunningJob]:
        if not tasks or limit <= 0:
            return []
        jobs = self.table
        query = self._select(
            jobs.c.task.in_(tasks),
            jobs.c.started_at < started_before,
            jobs.c.lease_until >= now,
            self._unmarked(),
        )
        return self._read(query, limit)

    def mark(self, jobs: Sequence[RunningJob]) -> list[RunningJob]:
        if not jobs:
            return []
        table = self.table

        def work(connection: Connection) -> list[RunningJob]:
            marked: list[RunningJob] = []
            for job in jobs:
                held = and_(
                    table.c.id == job.id,
                    self.database.mine(table),
                    table.c.state == RUNNING,
                    table.c.attempt == job.attempt,
                    self._unmarked(),
                )
                statement = update(table).where(held).values(stuck_attempt=table.c.attempt)
                if connection.execute(statement).rowcount == 1:
                    marked.append(job)
            return marked

        # Repeated after a commit that may have landed, it would find its own marks made and
        # announce nothing; an error, which the look logs, is the truer answer.
        return self.database.transaction(work, idempotent=False)

    def marked(self, limit: int) -> list[RunningJob]:
        if limit <= 0:
            return []
        jobs = self.table
        return self._read(self._select(jobs.c.stuck_attempt == jobs.c.attempt), limit)

    def _unmarked(self) -> ColumnElement[bool]:
        jobs = self.table
        return or_(jobs.c.stuck_attempt.is_(None), jobs.c.stuck_attempt != jobs.c.attempt)

    def _select(self, *where: ColumnElement[bool]) -> Select[Any]:
        """Running jobs of this namespace (the claim index's first two columns) with a start,
        oldest first."""
        jobs = self.table
        columns = (jobs.c.id, jobs.c.task, jobs.c.queue, jobs.c.attempt, jobs.c.started_at)
        return (
            select(*columns, jobs.c.schedule, jobs.c.lease_owner)
            .where(
                self.database.mine(jobs),
                jobs.c.state == RUNNING,
                jobs.c.started_at.is_not(None),
                *where,
            )
            .order_by(jobs.c.started_at, jobs.c.id)
        )

    def _read(self, query: Select[Any], limit: int) -> list[RunningJob]:
        return [
            RunningJob(
                id=row.id,
                task=row.task,
                queue=row.queue,
                attempt=row.attempt,
                started_at=row.started_at,
                schedule=row.schedule,
                lease_owner=row.lease_owner,
            )
            for row in self.database.fetch(query.limit(limit))
        ]
