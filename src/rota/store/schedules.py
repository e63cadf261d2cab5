"""Schedule rows: upsert by name, pause/resume/cancel, and firing ticks exactly once.

Firing is a compare-and-set on ``next_run_at`` followed by an insert that skips duplicates of
the ``(schedule, scheduled_at)`` unique key, so any number of instances may fire the same
schedule: one wins, the others change nothing and see no error.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import and_, case, func, select, update
from sqlalchemy.engine import Connection
from sqlalchemy.sql.elements import ColumnElement

from rota.core.model import (
    JobState,
    NewJob,
    Schedule,
    ScheduleSpec,
    ScheduleState,
    ScheduleStats,
)
from rota.store.database import Database
from rota.store.rows import aware, job_values, schedule_definition, to_schedule

LIVE = (ScheduleState.ACTIVE.value, ScheduleState.PAUSED.value)


class SqlSchedules:
    def __init__(self, database: Database) -> None:
        self.database = database
        self.table = database.schema.schedules

    def upsert(self, spec: ScheduleSpec, first_run: datetime, now: datetime) -> Schedule:
        """Create the schedule, or bring its definition up to date.

        A changed cron or time zone, or a schedule coming back from ``disabled``, starts again
        at ``first_run``; paused and cancelled schedules keep their state.
        """
        table = self.table
        definition = schedule_definition(spec)

        def work(connection: Connection) -> Schedule:
            row = connection.execute(
                select(table).where(table.c.name == spec.name).with_for_update()
            ).first()
            if row is None:
                values = {
                    **definition,
                    "state": ScheduleState.ACTIVE.value,
                    "next_run_at": first_run,
                    "created_at": now,
                    "updated_at": now,
                }
                statement = self.database.dialect.insert_ignoring_duplicates(table, [values])
                connection.execute(statement)
                row = connection.execute(select(table).where(table.c.name == spec.name)).one()
                return to_schedule(row._mapping)
            changes = {
                key: value for key, value in definition.items() if row._mapping[key] != value
            }
            restart = "cron" in changes or "tz" in changes
            if row.state == ScheduleState.DISABLED.value:
                changes["state"] = ScheduleState.ACTIVE.value
                restart = True
            if restart:
                changes["next_run_at"] = first_run
            if not changes:
                return to_schedule(row._mapping)
            changes["updated_at"] = now
            connection.execute(update(table).where(table.c.id == row.id).values(changes))
            updated = connection.execute(select(table).where(table.c.id == row.id)).one()
            return to_schedule(updated._mapping)

        return self.database.transaction(work)

    def get(self, name: str) -> Schedule | None:
        rows = self.database.fetch(select(self.table).where(self.table.c.name == name))
        return to_schedule(rows[0]._mapping) if rows else None

    def all(self, states: Sequence[ScheduleState] = ()) -> list[Schedule]:
        query = select(self.table).order_by(self.table.c.name)
        if states:
            query = query.where(self.table.c.state.in_([state.value for state in states]))
        return [to_schedule(row._mapping) for row in self.database.fetch(query)]

    def due(self, now: datetime, limit: int) -> list[Schedule]:
        table = self.table
        query = (
            select(table)
            .where(table.c.state == ScheduleState.ACTIVE.value, table.c.next_run_at <= now)
            .order_by(table.c.next_run_at)
            .limit(limit)
        )
        return [to_schedule(row._mapping) for row in self.database.fetch(query)]

    def next_due(self) -> datetime | None:
        table = self.table
        query = select(func.min(table.c.next_run_at)).where(
            table.c.state == ScheduleState.ACTIVE.value
        )
        ((value,),) = self.database.fetch(query)
        return aware(value)

    def fire(
        self, schedule: Schedule, next_run: datetime, jobs: Sequence[NewJob], now: datetime
    ) -> bool:
        """Enqueue ``jobs`` and move the schedule to ``next_run`` unless another instance did."""
        table = self.table
        last = max((job.scheduled_at for job in jobs if job.scheduled_at), default=None)
        changes: dict[str, Any] = {"next_run_at": next_run}
        if last is not None:
            changes["last_run_at"] = last

        def work(connection: Connection) -> bool:
            moved = connection.execute(
                update(table)
                .where(
                    table.c.name == schedule.name,
                    table.c.state == ScheduleState.ACTIVE.value,
                    table.c.next_run_at == schedule.next_run_at,
                )
                .values(changes)
            ).rowcount
            if not moved:
                return False
            if jobs:
                rows = [job_values(job, now) for job in jobs]
                insert = self.database.dialect.insert_ignoring_duplicates
                connection.execute(insert(self.database.schema.jobs, rows))
            return True

        return self.database.transaction(work)

    def set_state(
        self, name: str | None, target: ScheduleState, sources: Sequence[ScheduleState]
    ) -> int:
        """Move schedules (one, or all when ``name`` is None) from any of ``sources``."""
        table = self.table
        condition: ColumnElement[bool] = table.c.state.in_([state.value for state in sources])
        if name is not None:
            condition = and_(condition, table.c.name == name)
        statement = update(table).where(condition).values(state=target.value)
        return self.database.write(statement, idempotent=False)

    def resume(self, next_runs: Mapping[str, datetime], now: datetime) -> int:
        """Paused schedules back to active from their next tick: missed ticks never run."""
        table = self.table

        def work(connection: Connection) -> int:
            resumed = 0
            for name, next_run in next_runs.items():
                resumed += connection.execute(
                    update(table)
                    .where(table.c.name == name, table.c.state == ScheduleState.PAUSED.value)
                    .values(state=ScheduleState.ACTIVE.value, next_run_at=next_run, updated_at=now)
                ).rowcount
            return resumed

        return self.database.transaction(work, idempotent=False)

    def disable(self, names: Sequence[str], now: datetime) -> int:
        if not names:
            return 0
        table = self.table
        statement = (
            update(table)
            .where(table.c.name.in_(names), table.c.state.in_(LIVE))
            .values(state=ScheduleState.DISABLED.value, updated_at=now)
        )
        return self.database.write(statement)

    def stats(self) -> dict[str, ScheduleStats]:
        jobs = self.database.schema.jobs
        query = (
            select(
                jobs.c.schedule,
                func.count(jobs.c.started_at),
                func.sum(case((jobs.c.state == JobState.FAILED.value, 1), else_=0)),
                func.sum(case((jobs.c.state == JobState.RUNNING.value, 1), else_=0)),
                func.max(jobs.c.started_at),
            )
            .where(jobs.c.schedule.is_not(None))
            .group_by(jobs.c.schedule)
        )
        return {
            name: ScheduleStats(int(runs), int(failed or 0), int(running or 0), aware(last))
            for name, runs, failed, running, last in self.database.fetch(query)
        }
