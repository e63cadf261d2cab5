"""Schedule rows: upsert by name, edits as compare-and-set, pause/resume/cancel (each change
with its history entry), firing ticks exactly once (``firing``), and counting failed ticks
for alerts."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from functools import partial
from typing import Any

from sqlalchemy import Select, and_, case, false, func, insert, select, update
from sqlalchemy import exc as sa_exc
from sqlalchemy.engine import Connection
from sqlalchemy.sql.elements import ColumnElement

from rota.core.model import JobState, NewJob
from rota.core.overlap import Decision
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
from rota.store.base.schedules import Planner
from rota.store.database import Database
from rota.store.firing import SqlFiring
from rota.store.history import ScheduleHistory
from rota.store.overlap import SqlOverlap
from rota.store.rows import aware, to_schedule
from rota.store.values import Firings, UnreadableRow

LIVE = (ScheduleState.ACTIVE.value, ScheduleState.PAUSED.value)
UPSERT_CHUNK = 500
"""Schedules ``upsert_many`` reads and writes a transaction (10,000 code schedules: 20)."""
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
        self.firing = SqlFiring(database, self.history, self.overlap)

    def named(self, name: str) -> ColumnElement[bool]:
        """The namespace's schedule of that name (names are unique within a namespace)."""
        return and_(self.mine, self.table.c.name == name)

    def upsert(
        self, spec: ScheduleSpec, first_run: datetime, now: datetime, actor: str
    ) -> tuple[Schedule | None, Edit | None]:
        """Create the schedule, or bring its definition up to date (``schedule_edits.sync``):
        the schedule as it now is, and the change made (``None`` for none or a creation).  A
        row of that name that cannot be read is left as it is: ``(None, None)``."""

        def work(connection: Connection) -> tuple[Schedule | None, Edit | None]:
            edits = self._upsert(connection, [(spec, first_run)], now, actor)
            row = connection.execute(select(self.table).where(self.named(spec.name))).one()
            found = to_schedule(row._mapping)
            if isinstance(found, UnreadableRow):
                return None, None
            return found, edits.get(spec.name)

        return self.database.transaction(work)

    def upsert_many(
        self, specs: Sequence[tuple[ScheduleSpec, datetime]], now: datetime, actor: str
    ) -> dict[str, Edit]:
        """``upsert`` each schedule with its first run, ``UPSERT_CHUNK`` a transaction: the
        changes made by name (creations aside)."""
        edits: dict[str, Edit] = {}
        for start in range(0, len(specs), UPSERT_CHUNK):
            chunk = specs[start : start + UPSERT_CHUNK]
            edits |= self.database.transaction(
                partial(self._upsert, specs=chunk, now=now, actor=actor)
            )
        return edits

    def _upsert(
        self,
        connection: Connection,
        specs: Sequence[tuple[ScheduleSpec, datetime]],
        now: datetime,
        actor: str,
    ) -> dict[str, Edit]:
        """The rows of ``specs`` read and locked in one statement; the missing ones inserted in
        one (one by one after a racing instance created some of them); the others brought up
        to date.  The changes made by name (creations aside)."""
        table = self.table
        names = [spec.name for spec, _ in specs]
        locked = select(table).where(self.mine, table.c.name.in_(names)).with_for_update()
        rows = {row.name: row._mapping for row in connection.execute(locked)}
        missing = [(spec, first_run) for spec, first_run in specs if spec.name not in rows]
        values = [self._new_row(spec, first_run, now) for spec, first_run in missing]
        if values and not self._insert_new(connection, values):
            missing = [
                (spec, first_run)
                for (spec, first_run), row in zip(missing, values, strict=True)
                if len(values) > 1 and self._insert_new(connection, [row])
            ]
        self.history.record(
            connection,
            [
                ScheduleChange(spec.name, now, ScheduleAction.CREATED, actor, None, created(spec))
                for spec, _ in missing
            ],
        )
        edits: dict[str, Edit] = {}
        for spec, first_run in specs:
            if spec.name not in rows:
                continue
            found = to_schedule(rows[spec.name])
            if isinstance(found, UnreadableRow):
                self.database.reported.report(found)
                continue
            edit = sync(found, spec, first_run)
            if edit is not None:
                applied = self._apply(connection, spec.name, edit, actor, now)
                assert applied is not None, "the row is locked"
                edits[spec.name] = edit
        return edits

    def _new_row(self, spec: ScheduleSpec, first_run: datetime, now: datetime) -> dict[str, Any]:
        return {
            **definition(spec),
            "name": spec.name,
            "namespace": self.database.namespace,
            "state": ScheduleState.ACTIVE.value,
            "next_run_at": first_run,
            "created_at": now,
            "updated_at": now,
        }

    def _insert_new(self, connection: Connection, rows: list[dict[str, Any]]) -> bool:
        """Insert the schedules unless another transaction created one of them meanwhile (names
        are unique, and a racing insert waits for the other's commit): whether this one did.

        A plain INSERT in a savepoint, whose duplicate-key error says so on every backend: the
        row count of an INSERT that skipped a duplicate cannot tell, since MySQL's drivers count
        the duplicate matched (``CLIENT_FOUND_ROWS``) and SQLAlchemy keeps no count of an
        INSERT on psycopg (-1).
        """
        try:
            with connection.begin_nested():
                connection.execute(insert(self.table), rows)
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

    def fire_due(self, now: datetime, limit: int, planner: Planner) -> Firings:
        return self.firing.fire_due(now, limit, planner)

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
        return self.firing.fire(schedule, next_run, jobs, now)

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
        kept: runs and failures count the ticks from ``since``, one range of the
        ``(schedule, scheduled_at)`` unique index per schedule joined and grouped (each tick's
        row read once for both figures), and ``last_run`` is a correlated subquery on the
        same index stopping at the newest started tick.  Failures are a CASE, not a condition
        on ``state``, which would let the optimizer pick the claim index's range of every
        failed job.  Running jobs are counted from the claim index's ``running`` range.
        ``since`` comes from the caller, as every time does (``FINISHED_WINDOW`` before
        now)."""
        jobs, table = self.database.schema.jobs, self.table
        mine = and_(jobs.c.namespace == table.c.namespace, jobs.c.schedule == table.c.name)
        failed = jobs.c.state == JobState.FAILED.value
        tick = jobs.alias("tick")
        last = (
            select(tick.c.started_at)
            .where(tick.c.namespace == table.c.namespace, tick.c.schedule == table.c.name)
            .where(tick.c.started_at.is_not(None))
            .order_by(tick.c.scheduled_at.desc())
            .limit(1)
            .correlate(table)
            .scalar_subquery()
        )
        ticks = table.outerjoin(jobs, and_(mine, jobs.c.scheduled_at >= since))
        per_schedule = (
            select(table.c.name, func.count(jobs.c.started_at), func.count(case((failed, 1))), last)
            .select_from(ticks)
            .where(self.mine)
            .group_by(table.c.namespace, table.c.name)
        )
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
