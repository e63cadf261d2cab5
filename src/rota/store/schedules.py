"""Schedule rows: upsert by name, edits as compare-and-set, pause/resume/cancel (each change
with its history entry), firing ticks exactly once, and counting failed ticks for alerts.

Firing is a compare-and-set on ``next_run_at`` followed by an insert that skips duplicates of
the ``(schedule, scheduled_at)`` unique key, so any number of instances may fire the same
schedule: one wins, the others change nothing and see no error.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import Select, and_, case, false, func, insert, select, update
from sqlalchemy import exc as sa_exc
from sqlalchemy.engine import Connection
from sqlalchemy.sql.elements import ColumnElement

from rota.core.model import JobState, NewJob
from rota.core.overlap import Decision, Overlap, decide, skipped
from rota.core.schedule_edits import Edit, created, definition, sync
from rota.core.schedules import (
    Schedule,
    ScheduleAction,
    ScheduleChange,
    ScheduleSpec,
    ScheduleState,
    ScheduleStats,
)
from rota.errors import StoreError
from rota.store.database import Database
from rota.store.history import ScheduleHistory
from rota.store.overlap import SqlOverlap
from rota.store.rows import aware, job_values, to_schedule
from rota.store.values import UnreadableRow

LIVE = (ScheduleState.ACTIVE.value, ScheduleState.PAUSED.value)
SCHEDULER = "scheduler"
"""The actor of the history entries the scheduler writes (``runtime.services.actors``)."""
ACTIONS = {
    ScheduleState.ACTIVE: ScheduleAction.RESUMED,
    ScheduleState.PAUSED: ScheduleAction.PAUSED,
    ScheduleState.CANCELLED: ScheduleAction.CANCELLED,
    ScheduleState.DISABLED: ScheduleAction.DISABLED,
}


class SqlSchedules:
    def __init__(self, database: Database) -> None:
        self.database = database
        self.table = database.schema.schedules
        self.mine = database.mine(self.table)
        self.history = ScheduleHistory(database)
        self.overlap = SqlOverlap(database)

    def named(self, name: str) -> ColumnElement[bool]:
        """The namespace's schedule of that name (names are unique within a namespace)."""
        return and_(self.mine, self.table.c.name == name)

    def upsert(
        self, spec: ScheduleSpec, first_run: datetime, now: datetime, actor: str
    ) -> tuple[Schedule | None, Edit | None]:
        """Create the schedule, or bring its definition up to date (``schedule_edits.sync``):
        the schedule as it now is, and the change made (``None`` for none or a creation).  A
        row of that name that cannot be read is left as it is: ``(None, None)``."""
        table = self.table

        def work(connection: Connection) -> tuple[Schedule | None, Edit | None]:
            row = connection.execute(
                select(table).where(self.named(spec.name)).with_for_update()
            ).first()
            if row is None:
                values = {
                    **definition(spec),
                    "name": spec.name,
                    "namespace": self.database.namespace,
                    "state": ScheduleState.ACTIVE.value,
                    "next_run_at": first_run,
                    "created_at": now,
                    "updated_at": now,
                }
                if self._insert_new(connection, values):
                    entry = ScheduleChange(
                        spec.name, now, ScheduleAction.CREATED, actor, None, created(spec)
                    )
                    self.history.record(connection, [entry])
                row = connection.execute(select(table).where(self.named(spec.name))).one()
                return self._read(row._mapping), None
            found = to_schedule(row._mapping)
            if isinstance(found, UnreadableRow):
                self.database.reported.report(found)
                return None, None
            edit = sync(found, spec, first_run)
            if edit is None:
                return found, None
            applied = self._apply(connection, spec.name, edit, actor, now)
            assert applied is not None, "the row is locked"
            return applied, edit

        return self.database.transaction(work)

    def _insert_new(self, connection: Connection, values: dict[str, Any]) -> bool:
        """Insert the schedule unless another transaction did meanwhile (its name is unique,
        and a racing insert waits for the other's commit): whether this one did.

        A plain INSERT in a savepoint, whose duplicate-key error says so on every backend: the
        row count of an INSERT that skipped a duplicate cannot tell, since MySQL's drivers count
        the duplicate matched (``CLIENT_FOUND_ROWS``) and SQLAlchemy keeps no count of an
        INSERT on psycopg (-1).
        """
        try:
            with connection.begin_nested():
                connection.execute(insert(self.table).values(values))
        except sa_exc.IntegrityError:
            return False
        return True

    def change(
        self, name: str, version: int, edit: Edit, actor: str, now: datetime
    ) -> Schedule | None:
        """Apply ``edit`` to a live schedule still at ``version`` (compare-and-set): the schedule
        as it now is, or ``None`` when it changed meanwhile, ended or does not exist."""
        table = self.table

        def work(connection: Connection) -> Schedule | None:
            current = and_(table.c.version == version, table.c.state.in_(LIVE))
            return self._apply(connection, name, edit, actor, now, current)

        return self.database.transaction(work, idempotent=False)

    def _apply(
        self,
        connection: Connection,
        name: str,
        edit: Edit,
        actor: str,
        now: datetime,
        condition: ColumnElement[bool] | None = None,
    ) -> Schedule | None:
        """Write the edit's columns (a new version) and its history entry where the row meets
        ``condition``; the row after, or ``None`` if it did not."""
        table = self.table
        where = self.named(name) if condition is None else and_(self.named(name), condition)
        values = {**edit.values, "version": table.c.version + 1, "updated_at": now}
        if not connection.execute(update(table).where(where).values(values)).rowcount:
            return None
        entry = ScheduleChange(name, now, edit.action, actor, edit.old, edit.new)
        self.history.record(connection, [entry])
        row = connection.execute(select(table).where(self.named(name))).one()
        return self._read(row._mapping)

    def _read(self, row: Mapping[Any, Any]) -> Schedule:
        """The schedule of a row its caller needs: one that cannot be read is a ``StoreError``
        naming it (and logged once)."""
        read = to_schedule(row)
        if isinstance(read, UnreadableRow):
            self.database.reported.report(read)
            raise StoreError(f"schedule {read.key!r} cannot be read: {read.problem}")
        return read

    def get(self, name: str) -> Schedule | None:
        rows = self.database.fetch(select(self.table).where(self.named(name)))
        return self._read(rows[0]._mapping) if rows else None

    def all(self, states: Sequence[ScheduleState] = ()) -> list[Schedule]:
        """By name; the rows that cannot be read left out (and logged once)."""
        query = select(self.table).where(self.mine).order_by(self.table.c.name)
        if states:
            query = query.where(self.table.c.state.in_([state.value for state in states]))
        return self.database.readable(
            to_schedule(row._mapping) for row in self.database.fetch(query)
        )

    def due(self, now: datetime, limit: int) -> list[Schedule]:
        table = self.table
        query = (
            select(table)
            .where(
                self.mine,
                table.c.state == ScheduleState.ACTIVE.value,
                table.c.next_run_at <= now,
            )
            .order_by(table.c.next_run_at)
            .limit(limit)
        )
        return self.database.readable(
            to_schedule(row._mapping) for row in self.database.fetch(query)
        )

    def next_due(self) -> datetime | None:
        ((value,),) = self.database.fetch(self.next_due_query())
        return aware(value)

    def next_due_query(self) -> Select[Any]:
        """The earliest next run of an active schedule (the idle look asks it too)."""
        table = self.table
        return select(func.min(table.c.next_run_at)).where(
            self.mine, table.c.state == ScheduleState.ACTIVE.value
        )

    def fire(
        self, schedule: Schedule, next_run: datetime, jobs: Sequence[NewJob], now: datetime
    ) -> Decision | None:
        """Enqueue ``jobs`` as the schedule's overlap policy decides and move the schedule to
        ``next_run``, unless another instance did (``None``).  Skipped ticks are recorded in
        the history (actor ``scheduler``); a ``queue`` tick is linked to the runs it waits for."""
        table = self.table
        policy = schedule.spec.overlap

        def work(connection: Connection) -> Decision | None:
            ticks = [job.scheduled_at for job in jobs if job.scheduled_at is not None]
            unfinished: list[int] = []
            if jobs and policy is not Overlap.ALLOW:
                unfinished, fired = self.overlap.unfinished(connection, schedule.name, ticks)
                ticks = [tick for tick in ticks if tick not in fired]
            decision = decide(policy, ticks, unfinished)
            kept = [job for job in jobs if job.scheduled_at in decision.enqueue]
            changes: dict[str, Any] = {"next_run_at": next_run}
            if decision.enqueue:
                changes["last_run_at"] = max(decision.enqueue)
            moved = connection.execute(
                update(table)
                .where(
                    self.named(schedule.name),
                    table.c.state == ScheduleState.ACTIVE.value,
                    table.c.next_run_at == schedule.next_run_at,
                )
                .values(changes)
            ).rowcount
            if not moved:
                return None
            if kept:
                namespace = {"namespace": self.database.namespace}
                rows = [job_values(job, now) | namespace for job in kept]
                insert = self.database.dialect.insert_ignoring_duplicates
                connection.execute(insert(self.database.schema.jobs, rows))
                self.overlap.hold(connection, schedule.name, decision)
            self.history.record(
                connection,
                [
                    ScheduleChange(
                        schedule.name,
                        now,
                        ScheduleAction.SKIPPED,
                        SCHEDULER,
                        None,
                        skipped(tick, decision.unfinished),
                    )
                    for tick in decision.skipped
                ],
            )
            return decision

        return self.database.transaction(work)

    def set_state(
        self,
        name: str | None,
        target: ScheduleState,
        sources: Sequence[ScheduleState],
        now: datetime,
        actor: str,
        next_runs: Mapping[str, datetime] | None = None,
    ) -> int:
        """Move schedules (one, or all when ``name`` is None) from any of ``sources`` to
        ``target``, each recorded in the history; with ``next_runs``, only those named there,
        each starting again at its next run.  How many moved."""
        table = self.table
        condition = and_(self.mine, table.c.state.in_([state.value for state in sources]))
        if name is not None:
            condition = and_(condition, table.c.name == name)
        if next_runs is not None:
            condition = and_(condition, table.c.name.in_(sorted(next_runs)))
        action = ACTIONS[target]

        def work(connection: Connection) -> int:
            rows = connection.execute(
                select(table.c.name, table.c.state).where(condition).with_for_update()
            ).all()
            changes = []
            for moving, state in rows:
                values: dict[str, Any] = {"state": target.value, "updated_at": now}
                if next_runs is not None:
                    values["next_run_at"] = next_runs[moving]
                connection.execute(update(table).where(self.named(moving)).values(values))
                old, new = {"state": state}, {"state": target.value}
                changes.append(ScheduleChange(moving, now, action, actor, old, new))
            self.history.record(connection, changes)
            return len(rows)

        return self.database.transaction(work, idempotent=False)

    def resume(self, next_runs: Mapping[str, datetime], now: datetime, actor: str) -> int:
        """Paused schedules back to active from their next tick: missed ticks never run."""
        if not next_runs:
            return 0
        paused = (ScheduleState.PAUSED,)
        return self.set_state(None, ScheduleState.ACTIVE, paused, now, actor, next_runs)

    def disable(self, names: Sequence[str], now: datetime, actor: str = "code") -> int:
        if not names:
            return 0
        live = [ScheduleState(state) for state in LIVE]
        return sum(self.set_state(name, ScheduleState.DISABLED, live, now, actor) for name in names)

    def history_of(self, name: str, limit: int | None = None) -> list[ScheduleChange]:
        return self.history.of(name, limit)

    def prune_history(self, before: datetime, limit: int) -> int:
        return self.history.prune(before, limit)

    def record_tick(self, name: str, failed: bool, threshold: int) -> str | None:
        """Count a tick's job that ended (failed or succeeded) against the schedule's run of
        failures: ``"failing"`` when this failure makes ``threshold`` in a row, ``"recovered"``
        when this success ends a failing run, else ``None``.  Each flip is a compare-and-set,
        so one process of the cluster reports it."""
        table = self.table
        named = self.named(name)

        def work(connection: Connection) -> str | None:
            if not failed:
                recovered = connection.execute(
                    update(table).where(named, table.c.failing).values(failing=False, failures=0)
                ).rowcount
                if recovered:
                    return "recovered"
                connection.execute(
                    update(table).where(named, table.c.failures > 0).values(failures=0)
                )
                return None
            connection.execute(update(table).where(named).values(failures=table.c.failures + 1))
            flipped = connection.execute(
                update(table)
                .where(named, table.c.failing == false(), table.c.failures >= threshold)
                .values(failing=True)
            ).rowcount
            return "failing" if flipped else None

        return self.database.transaction(work, idempotent=False)

    def stats(self, since: datetime) -> dict[str, ScheduleStats]:
        """Per schedule, from its newest ticks only, so the cost does not grow with the ticks
        kept: each figure is a correlated subquery on the ``(schedule, scheduled_at)`` unique
        index, bounded by ``since`` (runs, failures) or stopping at the newest started tick
        (``last_run``).  Failures are a CASE, not a condition on ``state``, which would let
        the optimizer pick the claim index's range of every failed job.  Running jobs are
        counted from the claim index's ``running`` range.  ``since`` comes from the caller,
        as every time does (``FINISHED_WINDOW`` before now)."""
        jobs, table = self.database.schema.jobs, self.table
        mine = and_(jobs.c.namespace == table.c.namespace, jobs.c.schedule == table.c.name)
        recent = (mine, jobs.c.scheduled_at >= since)
        failed = jobs.c.state == JobState.FAILED.value
        last = jobs.c.started_at.is_not(None)
        per_schedule = select(
            table.c.name,
            select(func.count(jobs.c.started_at)).where(*recent).scalar_subquery(),
            select(func.count(case((failed, 1)))).where(*recent).scalar_subquery(),
            select(jobs.c.started_at)
            .where(mine, last)
            .order_by(jobs.c.scheduled_at.desc())
            .limit(1)
            .scalar_subquery(),
        ).where(self.mine)
        # Every running job, unscheduled ones in a group of their own: a condition on
        # ``schedule`` would tempt PostgreSQL to walk every tick of the unique index instead.
        running = (
            select(jobs.c.schedule, func.count())
            .where(self.database.mine(jobs), jobs.c.state == JobState.RUNNING.value)
            .group_by(jobs.c.schedule)
        )

        def work(connection: Connection) -> dict[str, ScheduleStats]:
            counted = {name: int(n) for name, n in connection.execute(running)}
            return {
                name: ScheduleStats(int(runs), int(failures), counted.get(name, 0), aware(at))
                for name, runs, failures, at in connection.execute(per_schedule)
            }

        return self.database.transaction(work)
