"""Ticks becoming jobs: a batch of due schedules taken in one transaction, each schedule's ticks
decided by its overlap policy, the jobs of the whole batch written together.

The due rows are locked as they are read, skipping rows another instance holds
(``SELECT ... FOR UPDATE SKIP LOCKED``, or SQLite's single writer), so replicas share the due
schedules instead of racing for the same rows: 10,000 schedules due at one minute were
thousands of transactions, one a schedule, half of them waiting on the winner's row lock to
lose.  The move of ``next_run_at`` stays a compare-and-set and the jobs' insert skips
duplicates of the ``(schedule, scheduled_at)`` unique key, so a firing on a schedule read
outside the batch (``fire``) changes nothing when it lost.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import case, select, update
from sqlalchemy.engine import Connection

from rota.core.model import NewJob
from rota.core.overlap import Decision, Overlap, decide, skipped
from rota.core.schedules import Schedule, ScheduleAction, ScheduleChange, ScheduleState
from rota.errors import StoreError
from rota.store.base.schedules import Planner
from rota.store.database import Database
from rota.store.history import ScheduleHistory
from rota.store.overlap import SqlOverlap
from rota.store.rows import job_values, to_schedule
from rota.store.sizes import sent_bytes
from rota.store.tags import JobTags
from rota.store.values import Fired, Firings, UnreadableRow

SCHEDULER = "scheduler"
"""The actor of the history entries the scheduler writes (``runtime.services.actors``)."""
INSERT_BYTES = 1024 * 1024
"""The most payload bytes one INSERT of tick jobs carries (far below any server's limit)."""


@dataclass(frozen=True)
class Firing:
    schedule: Schedule
    next_run: datetime
    jobs: Sequence[NewJob]


class SqlFiring:
    def __init__(self, database: Database, history: ScheduleHistory, overlap: SqlOverlap) -> None:
        self.database = database
        self.table = database.schema.schedules
        self.history = history
        self.overlap = overlap
        self.tags = JobTags(database)

    def fire_due(self, now: datetime, limit: int, planner: Planner) -> Firings:
        """Take up to ``limit`` active schedules due at ``now`` that no other instance holds,
        earliest first, and fire each as ``planner`` says, in one transaction."""
        table = self.table
        due = (
            select(table)
            .where(
                self.database.mine(table),
                table.c.state == ScheduleState.ACTIVE.value,
                table.c.next_run_at <= now,
            )
            .order_by(table.c.next_run_at)
            .limit(limit)
        )

        def work(connection: Connection) -> Firings:
            rows = connection.execute(self.database.dialect.lock_for_claim(due)).all()
            firings = []
            for row in rows:
                schedule = to_schedule(row._mapping)
                if isinstance(schedule, UnreadableRow):
                    self.database.reported.report(schedule)
                    continue
                planned = planner(schedule)
                if planned is not None:
                    firings.append(Firing(schedule, *planned))
            fired = [f for f in self._fire(connection, firings, now) if f is not None]
            return Firings(len(rows), fired)

        return self.database.transaction(work)

    def fire(
        self, schedule: Schedule, next_run: datetime, jobs: Sequence[NewJob], now: datetime
    ) -> Decision | None:
        """One schedule as read (perhaps by another instance's pass meanwhile): ``None`` when
        its ``next_run_at`` moved since."""

        def work(connection: Connection) -> Decision | None:
            (fired,) = self._fire(connection, [Firing(schedule, next_run, jobs)], now)
            return fired.decision if fired is not None else None

        return self.database.transaction(work)

    def _fire(
        self, connection: Connection, firings: Sequence[Firing], now: datetime
    ) -> list[Fired | None]:
        """Decide each firing's ticks, move the schedules on (``None`` where one had moved
        already), then write the batch's jobs, their overlap links and the skipped ticks'
        history."""
        policed = {
            f.schedule.name: ticks_of(f.jobs)
            for f in firings
            if f.jobs and f.schedule.spec.overlap is not Overlap.ALLOW
        }
        seen = self.overlap.unfinished(connection, policed)
        decisions = []
        for firing in firings:
            unfinished, existing = seen.get(firing.schedule.name, ([], set()))
            ticks = [tick for tick in ticks_of(firing.jobs) if tick not in existing]
            decisions.append(decide(firing.schedule.spec.overlap, ticks, unfinished))
        moved = self._move(connection, firings, decisions)
        results: list[Fired | None] = []
        rows: list[dict[str, Any]] = []
        chained: list[tuple[str, Decision]] = []
        history: list[ScheduleChange] = []
        namespace = {"namespace": self.database.namespace}
        for firing, decision in zip(firings, decisions, strict=True):
            schedule = firing.schedule
            if schedule.name not in moved:
                results.append(None)
                continue
            kept = [job for job in firing.jobs if job.scheduled_at in decision.enqueue]
            rows += [job_values(job, now) | namespace for job in kept]
            if kept and decision.chained:
                chained.append((schedule.name, decision))
            history += [
                ScheduleChange(
                    schedule.name,
                    now,
                    ScheduleAction.SKIPPED,
                    SCHEDULER,
                    None,
                    skipped(tick, decision.unfinished),
                )
                for tick in decision.skipped
            ]
            results.append(Fired(schedule, decision, tuple(kept)))
        insert = self.database.dialect.insert_ignoring_duplicates(self.database.schema.jobs)
        for group in by_payload(rows, INSERT_BYTES):
            connection.execute(insert, group)
        self._tag(connection, [job for fired in results if fired for job in fired.jobs])
        for name, decision in chained:
            self.overlap.hold(connection, name, decision)
        self.history.record(connection, history)
        return results

    def _tag(self, connection: Connection, jobs: Sequence[NewJob]) -> None:
        """The tags of the ticks' jobs (their task's), found by their tick key: a tick another
        instance wrote first is its job, whose tags it wrote too (a duplicate is skipped)."""
        table = self.database.schema.jobs
        tagged = []
        for job in (job for job in jobs if job.tags):
            found = connection.execute(
                select(table.c.id).where(
                    self.database.mine(table),
                    table.c.schedule == job.schedule,
                    table.c.scheduled_at == job.scheduled_at,
                    table.c.tick.is_not(None),
                )
            ).scalar()
            if found is not None:
                tagged.append((int(found), job.tags))
        self.tags.write(connection, tagged)

    def _move(
        self, connection: Connection, firings: Sequence[Firing], decisions: Sequence[Decision]
    ) -> set[str]:
        """Move each schedule to its next run (and its last run to its newest tick enqueued)
        where it is still active at the next run it was read with, in one UPDATE whose
        ``CASE`` gives each row its values: the names moved.  Rows locked since they were read
        all move; a firing on a row read earlier (``fire``, one schedule) may find it moved
        meanwhile."""
        if not firings:
            return set()
        table = self.table
        names = [firing.schedule.name for firing in firings]
        read = {f.schedule.name: f.schedule.next_run_at for f in firings}
        last = {
            f.schedule.name: max(d.enqueue)
            for f, d in zip(firings, decisions, strict=True)
            if d.enqueue
        }
        values: dict[str, Any] = {
            "next_run_at": case({f.schedule.name: f.next_run for f in firings}, value=table.c.name)
        }
        if last:
            values["last_run_at"] = case(last, value=table.c.name, else_=table.c.last_run_at)
        where = (
            self.database.mine(table),
            table.c.name.in_(names),
            table.c.state == ScheduleState.ACTIVE.value,
            table.c.next_run_at == case(read, value=table.c.name),
        )
        moved = connection.execute(update(table).where(*where).values(values)).rowcount
        if moved == len(names):
            return set(names)
        if len(names) == 1:
            return set()
        raise StoreError(f"{moved} of the {len(names)} schedules locked for firing moved")


def ticks_of(jobs: Sequence[NewJob]) -> list[datetime]:
    return [job.scheduled_at for job in jobs if job.scheduled_at is not None]


def by_payload(rows: list[dict[str, Any]], budget: int) -> list[list[dict[str, Any]]]:
    """``rows`` in order, in groups whose payloads together stay within ``budget`` bytes (a row
    larger than that alone in its group)."""
    groups: list[list[dict[str, Any]]] = []
    size = 0
    for row in rows:
        cost = sent_bytes(row["payload"])
        if not groups or size + cost > budget:
            groups.append([])
            size = 0
        groups[-1].append(row)
        size += cost
    return groups
