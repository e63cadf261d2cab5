"""Schedule rows: upsert by name, pause/resume/cancel, and firing ticks exactly once.

Firing is a compare-and-set on ``next_run_at`` followed by an insert that skips duplicates of
the ``(schedule, scheduled_at)`` unique key, so any number of instances may fire the same
schedule: one wins, the others change nothing and see no error.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any

from sqlalchemy import Row, and_, case, func, select, update
from sqlalchemy.engine import Connection
from sqlalchemy.sql.elements import ColumnElement

from rota.core.model import (
    JobState,
    NewJob,
    Schedule,
    ScheduleSource,
    ScheduleSpec,
    ScheduleState,
    ScheduleStats,
)

if TYPE_CHECKING:
    from rota.store.sql import SqlStore

LIVE = (ScheduleState.ACTIVE.value, ScheduleState.PAUSED.value)


class SqlSchedules:
    def __init__(self, store: SqlStore) -> None:
        self._store = store
        self.table = store.schema.schedules

    def upsert(self, spec: ScheduleSpec, first_run: datetime, now: datetime) -> Schedule:
        """Create the schedule, or bring its definition up to date.

        A changed cron or time zone, or a schedule coming back from ``disabled``, starts again
        at ``first_run``; paused and cancelled schedules keep their state.
        """
        table = self.table
        definition = _definition(spec)

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
                statement = self._store.dialect.insert_ignoring_duplicates(table, [values])
                connection.execute(statement)
                row = connection.execute(select(table).where(table.c.name == spec.name)).one()
                return _to_schedule(row)
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
                return _to_schedule(row)
            changes["updated_at"] = now
            connection.execute(update(table).where(table.c.id == row.id).values(changes))
            return _to_schedule(connection.execute(select(table).where(table.c.id == row.id)).one())

        return self._store._transaction(work)

    def get(self, name: str) -> Schedule | None:
        query = select(self.table).where(self.table.c.name == name)
        row = self._store._transaction(lambda conn: conn.execute(query).first())
        return _to_schedule(row) if row is not None else None

    def all(self, states: Sequence[ScheduleState] = ()) -> list[Schedule]:
        query = select(self.table).order_by(self.table.c.name)
        if states:
            query = query.where(self.table.c.state.in_([state.value for state in states]))
        rows = self._store._transaction(lambda conn: conn.execute(query).all())
        return [_to_schedule(row) for row in rows]

    def due(self, now: datetime, limit: int) -> list[Schedule]:
        table = self.table
        query = (
            select(table)
            .where(table.c.state == ScheduleState.ACTIVE.value, table.c.next_run_at <= now)
            .order_by(table.c.next_run_at)
            .limit(limit)
        )
        rows = self._store._transaction(lambda conn: conn.execute(query).all())
        return [_to_schedule(row) for row in rows]

    def next_due(self) -> datetime | None:
        table = self.table
        query = select(func.min(table.c.next_run_at)).where(
            table.c.state == ScheduleState.ACTIVE.value
        )
        value = self._store._transaction(lambda conn: conn.execute(query).scalar())
        return _aware(value)

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
                rows = [self._store._job_values(job, now) for job in jobs]
                connection.execute(
                    self._store.dialect.insert_ignoring_duplicates(self._store.schema.jobs, rows)
                )
            return True

        return self._store._transaction(work)

    def set_state(
        self, name: str | None, target: ScheduleState, sources: Sequence[ScheduleState]
    ) -> int:
        """Move schedules (one, or all when ``name`` is None) from any of ``sources``."""
        table = self.table
        condition: ColumnElement[bool] = table.c.state.in_([state.value for state in sources])
        if name is not None:
            condition = and_(condition, table.c.name == name)
        statement = update(table).where(condition).values(state=target.value)
        changed = self._store._transaction(
            lambda conn: conn.execute(statement).rowcount, idempotent=False
        )
        return int(changed)

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

        return self._store._transaction(work, idempotent=False)

    def disable(self, names: Sequence[str], now: datetime) -> int:
        if not names:
            return 0
        table = self.table
        statement = (
            update(table)
            .where(table.c.name.in_(names), table.c.state.in_(LIVE))
            .values(state=ScheduleState.DISABLED.value, updated_at=now)
        )
        return int(self._store._transaction(lambda conn: conn.execute(statement).rowcount))

    def stats(self) -> dict[str, ScheduleStats]:
        jobs = self._store.schema.jobs
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
        rows = self._store._transaction(lambda conn: conn.execute(query).all())
        return {
            name: ScheduleStats(int(runs), int(failed or 0), int(running or 0), _aware(last))
            for name, runs, failed, running, last in rows
        }


def _definition(spec: ScheduleSpec) -> dict[str, Any]:
    return {
        "name": spec.name,
        "task": spec.task,
        "cron": spec.cron,
        "tz": spec.tz,
        "payload": spec.payload,
        "queue": spec.queue,
        "priority": spec.priority,
        "source": spec.source.value,
    }


def _aware(value: datetime | None) -> datetime | None:
    """Aggregates lose the column type on some drivers; read them back as aware UTC."""
    if value is None or value.tzinfo is not None:
        return value
    return value.replace(tzinfo=timezone.utc)


def _to_schedule(row: Row[Any]) -> Schedule:
    data = row._mapping
    spec = ScheduleSpec(
        name=data["name"],
        task=data["task"],
        cron=data["cron"],
        tz=data["tz"],
        payload=data["payload"],
        queue=data["queue"],
        priority=data["priority"],
        source=ScheduleSource(data["source"]),
    )
    return Schedule(
        spec=spec,
        state=ScheduleState(data["state"]),
        next_run_at=data["next_run_at"],
        last_run_at=data["last_run_at"],
        created_at=data["created_at"],
        updated_at=data["updated_at"],
    )
