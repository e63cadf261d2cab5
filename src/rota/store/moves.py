"""What an operator does to jobs, one (``rota.cancel(id)``, ``pause(id)``) or a bulk action's
batch, the same way.  A cancel ends a job not yet running, or parked waiting, at once (its
dependents with it) and asks a running one to stop at its worker's next heartbeat; a pause or
resume moves jobs between ``pending`` and ``paused``.  Each locks the rows it reads and answers
with the jobs it changed, as they were, for their announcements."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import Row, select, true, update
from sqlalchemy.engine import Connection

from rota.core.model import JobRef, JobState
from rota.store.database import Database
from rota.store.dependencies import SqlDependencies
from rota.store.rows import RUNNING, UNSTARTED, released_key
from rota.store.values import Applied

PARKED = (*UNSTARTED, JobState.WAITING.value)
"""States a cancel ends at once: no worker runs the job."""


class Moves:
    def __init__(self, database: Database, dependencies: SqlDependencies) -> None:
        self.database = database
        self.jobs = database.schema.jobs
        self.dependencies = dependencies

    def cancel(
        self, connection: Connection, job_ids: Sequence[int], now: datetime
    ) -> tuple[Applied, list[JobRef]]:
        """What the cancel of ``job_ids`` applied, and the jobs it reached, as they were."""
        jobs = self.jobs
        found = self._locked(connection, job_ids, (*PARKED, RUNNING))
        ended = [row.id for row in found if row.state in PARKED]
        running = [row.id for row in found if row.state == RUNNING]
        if ended:
            connection.execute(
                update(jobs)
                .where(jobs.c.id.in_(ended), jobs.c.state.in_(PARKED))
                .values(
                    state=JobState.CANCELLED.value,
                    finished_at=now,
                    unique_key=released_key(jobs),
                    waiting_for=None,
                )
            )
        if running:
            connection.execute(
                update(jobs)
                .where(jobs.c.id.in_(running), jobs.c.state == RUNNING)
                .values(cancel_requested=true())
            )
        cascaded = self.dependencies.cascade(connection, ended, now) if ended else []
        applied = Applied(frozenset(ended), tuple(cascaded), requested=frozenset(running))
        return applied, [_ref(row) for row in found]

    def move(
        self, connection: Connection, job_ids: Sequence[int], source: JobState, target: JobState
    ) -> list[JobRef]:
        """The jobs of ``job_ids`` still in ``source``, moved to ``target``."""
        jobs = self.jobs
        found = [_ref(row) for row in self._locked(connection, job_ids, [source.value])]
        if found:
            moved = [job.id for job in found]
            connection.execute(
                update(jobs)
                .where(jobs.c.id.in_(moved), jobs.c.state == source.value)
                .values(state=target.value)
            )
        return found

    def _locked(
        self, connection: Connection, job_ids: Sequence[int], states: Sequence[str]
    ) -> list[Row[Any]]:
        jobs = self.jobs
        columns = (jobs.c.id, jobs.c.task, jobs.c.queue, jobs.c.attempt, jobs.c.schedule)
        locked = (
            select(*columns, jobs.c.state)
            .where(jobs.c.id.in_(job_ids), jobs.c.state.in_(states))
            .order_by(jobs.c.id)
            .with_for_update()
        )
        return list(connection.execute(locked))


def _ref(row: Row[Any]) -> JobRef:
    return JobRef(row.id, row.task, row.queue, row.attempt, row.schedule)
