"""A job's life in SQL: enqueue, claim, finish, lease renewal, rescue, cancel (a finished job's
retry and prune are in ``finished``).

Every state change is a compare-and-set: an UPDATE whose WHERE names the state (and the lease
owner) it expects, so a late worker or a second rescuer changes nothing and learns so from the
row count.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import Select, Table, Update, and_, case, select, update
from sqlalchemy.engine import Connection
from sqlalchemy.sql.elements import ColumnElement

from rota.core.limits import FlowLimits
from rota.core.model import MAX_JOB_ID, Job, JobRef, JobState, NewJob, ProgressReport
from rota.core.transitions import Transition
from rota.store.candidates import ClaimCandidates
from rota.store.database import Database
from rota.store.dependencies import ENDED_BADLY, SqlDependencies
from rota.store.limits import FlowClaims
from rota.store.moves import Moves
from rota.store.rows import (
    RUNNING,
    errors_json,
    finished_values,
    job_values,
    lease_expired,
    set_only,
    to_job,
)
from rota.store.sizes import by_size
from rota.store.successes import Successes
from rota.store.tags import JobTags
from rota.store.unique import UniqueKeys
from rota.store.values import Applied
from rota.store.workflow import SqlWorkflow


class SqlJobs:
    def __init__(self, database: Database) -> None:
        self.database = database
        self.table = database.schema.jobs
        self.successes = Successes(self.table)
        self.flow = FlowClaims(database)
        self.dependencies = SqlDependencies(database)
        self.candidates = ClaimCandidates(database, self.dependencies)
        self.workflow = SqlWorkflow(database)
        self.unique = UniqueKeys(database)
        self.moves = Moves(database, self.dependencies)
        self.tags = JobTags(database)

    def enqueue(
        self, jobs: Sequence[NewJob], now: datetime, connection: Connection | None = None
    ) -> list[int]:
        if connection is not None:
            with self.database.translate_errors():
                return self.write(connection, jobs, now)
        # Repeating an insert whose commit may have landed would queue the jobs twice.
        return self.database.transaction(lambda conn: self.write(conn, jobs, now), idempotent=False)

    def write(self, connection: Connection, jobs: Sequence[NewJob], now: datetime) -> list[int]:
        """The rows, in ``connection``'s transaction, their dependencies checked first and
        linked after (see ``dependencies``), their tags beside them."""
        namespace = {"namespace": self.database.namespace}
        rows = [job_values(job, now) | namespace for job in jobs]
        waits, afters = [job.depends_on for job in jobs], [job.after for job in jobs]
        if any(waits) or any(afters):
            waits, afters = self.dependencies.prepare(connection, rows, waits, afters, now)
        ids, new = self._insert_all(connection, rows, jobs, now)
        if any(waits) or any(afters):
            self.dependencies.link(connection, ids, waits)
            self.dependencies.link(connection, ids, afters, until_final=True)
        tagged = [(i, job.tags) for i, job, n in zip(ids, jobs, new, strict=True) if n and job.tags]
        if tagged:
            self.tags.write(connection, tagged)
        return ids

    def _insert_all(
        self,
        connection: Connection,
        rows: list[dict[str, Any]],
        jobs: Sequence[NewJob],
        now: datetime,
    ) -> tuple[list[int], list[bool]]:
        """Plain rows in bulk; rows with a unique key one by one (``store.unique``): the ids,
        and which rows were written (a key's live holder is returned instead)."""
        plain = [row for row in rows if row["unique_key"] is None]
        table, dialect = self.table, self.database.dialect
        inserted = dialect.insert_ids(connection, table, set_only(table, plain)) if plain else []
        ids = {id(row): (job_id, True) for row, job_id in zip(plain, inserted, strict=True)}
        for row, job in zip(rows, jobs, strict=True):
            if row["unique_key"] is not None:
                ids[id(row)] = self.unique.insert(connection, row, job.debounce, now)
        written = [ids[id(row)] for row in rows]
        return [job_id for job_id, _ in written], [new for _, new in written]

    def claim(
        self,
        worker_id: str,
        queues: Sequence[str],
        tasks: Sequence[str],
        limit: int,
        now: datetime,
        lease_until: datetime,
        limits: Mapping[str, FlowLimits] | None = None,
    ) -> list[Job]:
        if limit <= 0 or not queues or not tasks:
            return []
        self.candidates.task_sets.key(tasks)
        # Tasks without limits keep the plain claim: they pay nothing for flow control.
        flows = {task: limits[task] for task in tasks if limits and task in limits}
        values = {
            "state": RUNNING,
            "started_at": now,
            "lease_owner": worker_id,
            "lease_until": lease_until,
            # Each attempt reports its own progress: a retry does not show the last one's.
            "progress": None,
            "progress_note": None,
            "stuck_attempt": None,
        }

        def work(connection: Connection) -> list[Job]:
            levels = self.candidates.levels(connection, queues, now)
            if flows:

                def take(n: int, also: Sequence[ColumnElement[bool]]) -> list[dict[str, Any]]:
                    return self.candidates.take(connection, levels, tasks, n, now, also)

                claimed = self.flow.claim(connection, take, flows, limit, now, values)
            else:

                def lock(query: Select[Any], parameters: Mapping[str, Any]) -> list[dict[str, Any]]:
                    dialect = self.database.dialect
                    return dialect.claim(connection, self.table, query, values, parameters)

                claimed = self.candidates.take(connection, levels, tasks, limit, now, (), lock)
            jobs = [to_job(row) for row in claimed]
            return sorted(jobs, key=lambda job: (job.priority, job.run_at, job.id))

        jobs = self.database.transaction(work)
        if flows:
            self.flow.committed()
        return jobs

    def complete(
        self,
        worker_id: str,
        transitions: Sequence[Transition],
        now: datetime,
        progress: Sequence[ProgressReport] = (),
    ) -> Applied:
        held = self.successes.held_by(worker_id)

        def work(connection: Connection) -> Applied:
            self._write_progress(connection, worker_id, progress)
            return self._apply(connection, transitions, held, now)

        return self.database.transaction(work)

    def rescue(self, transitions: Sequence[Transition], now: datetime) -> Applied:
        expired = lease_expired(self.table, now)
        return self.database.transaction(lambda conn: self._apply(conn, transitions, expired, now))

    def _apply(
        self,
        connection: Connection,
        transitions: Sequence[Transition],
        guard: ColumnElement[bool],
        now: datetime,
    ) -> Applied:
        """Successes without a result share one UPDATE, those with one share an UPDATE whose
        ``CASE`` gives each row its result (a statement a row would multiply the round trips of
        a report, and with them its chances of meeting a dropped connection), as many as the
        server takes in one statement (``sizes``); every other transition writes its own row.
        Which rows applied is known from each row count, or, when a shared UPDATE changed fewer
        rows than it named (another writer won some), read back in the same transaction: the
        rows that now hold this success at this ``now``, which also counts the write of a
        transaction repeated after its connection dropped, whose first try had committed."""
        jobs = self.table
        released = {"lease_owner": None, "lease_until": None, "cancel_requested": False}
        finished = finished_values(jobs)
        success = {"state": JobState.SUCCEEDED.value, "finished_at": now, **finished}
        applied: set[int] = set()
        cancelled: set[int] = set()
        """Waits whose job was asked to stop meanwhile, cancelled instead of parked."""

        def shared(
            ids: list[int], statement: Update, parameters: Mapping[str, Any] | None = None
        ) -> None:
            if connection.execute(statement, parameters).rowcount == len(ids):
                applied.update(ids)
                return
            done = (jobs.c.state == JobState.SUCCEEDED.value, jobs.c.finished_at == now)
            written = select(jobs.c.id).where(jobs.c.id.in_(ids), *done)
            applied.update(connection.execute(written).scalars())

        succeeded = [t for t in transitions if t.target is JobState.SUCCEEDED]
        for held, alike in _by_held(succeeded).items():
            at_held = and_(guard, *_held_at(jobs, held))
            with_results = [t for t in alike if t.result is not None]
            limit = self.database.statement_limit(connection) if with_results else 0
            plain = [t.job_id for t in alike if t.result is None]
            if plain:
                plainly = self.successes.update(guard, held)
                shared(plain, plainly, {"ids": plain, "held": held, "finished_at": now})
            for chunk in by_size(with_results, limit) if with_results else []:
                results = case({t.job_id: t.result for t in chunk}, value=jobs.c.id)
                ids = [t.job_id for t in chunk]
                where = update(jobs).where(jobs.c.id.in_(ids), at_held)
                shared(ids, where.values(result=results, **success))
        for t in transitions:
            if t.target is JobState.SUCCEEDED:
                continue
            if t.target is JobState.WAITING:
                parked = self.workflow.park(connection, t, guard)
                if parked is not None:
                    applied.add(t.job_id)
                if parked is JobState.CANCELLED:
                    cancelled.add(t.job_id)
                continue
            values: dict[str, Any] = {
                "state": t.target.value,
                "attempt": t.attempt,
                **(finished if t.finishes else released),
            }
            if t.finishes:
                values["finished_at"] = t.at
            if t.run_at is not None:
                values["run_at"] = t.run_at
            if t.errors is not None:
                values["errors"] = errors_json(t.errors)
                values["error_code"] = t.errors[-1].code if t.errors else None
            if t.snoozes is not None:
                values["snoozes"] = t.snoozes
            if connection.execute(
                update(jobs)
                .where(jobs.c.id == t.job_id, guard, *_held_at(jobs, t.held))
                .values(values)
            ).rowcount:
                applied.add(t.job_id)
        ended = [t.job_id for t in transitions if t.target in ENDED_BADLY and t.job_id in applied]
        cascaded = self.dependencies.cascade(connection, [*ended, *cancelled], now)
        return Applied(frozenset(applied), tuple(cascaded), cancelled=frozenset(cancelled))

    def heartbeat(
        self,
        worker_id: str,
        job_ids: Sequence[int],
        now: datetime,
        lease_until: datetime,
        progress: Sequence[ProgressReport] = (),
    ) -> tuple[set[int], set[int]]:
        jobs, workers = self.table, self.database.schema.workers
        beat = update(workers).where(workers.c.id == worker_id).values(heartbeat_at=now)
        if not job_ids:
            self.database.write(beat)
            return set(), set()

        def work(connection: Connection) -> tuple[set[int], set[int]]:
            connection.execute(beat)
            held = and_(
                jobs.c.id.in_(job_ids), jobs.c.state == RUNNING, jobs.c.lease_owner == worker_id
            )
            connection.execute(update(jobs).where(held).values(lease_until=lease_until))
            self._write_progress(connection, worker_id, progress)
            rows = connection.execute(select(jobs.c.id, jobs.c.cancel_requested).where(held))
            still_held: set[int] = set()
            cancel: set[int] = set()
            for job_id, cancel_requested in rows:
                still_held.add(job_id)
                if cancel_requested:
                    cancel.add(job_id)
            return cancel, set(job_ids) - still_held

        return self.database.transaction(work)

    def _write_progress(
        self, connection: Connection, worker_id: str, reports: Sequence[ProgressReport]
    ) -> None:
        """One UPDATE whose ``CASE``s give each job its value (one round trip, as for results),
        each row written only while the reporting attempt still holds the job: a late value
        from an attempt that was rescued, retried or taken by another worker changes nothing."""
        if not reports:
            return
        jobs = self.table

        def by_job(values: Mapping[int, Any]) -> Any:
            return case(values, value=jobs.c.id)

        connection.execute(
            update(jobs)
            .where(
                jobs.c.id.in_([report.job_id for report in reports]),
                jobs.c.attempt == by_job({r.job_id: r.attempt for r in reports}),
                jobs.c.state == RUNNING,
                jobs.c.lease_owner == worker_id,
            )
            .values(
                progress=by_job({r.job_id: r.progress.fraction for r in reports}),
                progress_note=by_job({r.job_id: r.progress.note for r in reports}),
            )
        )

    def expired_leases(self, now: datetime, limit: int) -> list[Job]:
        jobs = self.table
        query = (
            select(jobs)
            .where(lease_expired(jobs, now), self.database.mine(jobs))
            .order_by(jobs.c.lease_until)
            .limit(limit)
        )
        return [to_job(row._mapping) for row in self.database.fetch(query)]

    def cancel(self, job_id: int, now: datetime) -> Applied | None:
        if not 0 < job_id <= MAX_JOB_ID:
            return None

        def work(connection: Connection) -> Applied | None:
            applied, found = self.moves.cancel(connection, [job_id], now)
            if found:
                return applied
            return None if self._exists(connection, job_id) is None else Applied()

        return self.database.transaction(work, idempotent=False)

    def cancel_many(self, job_ids: Sequence[int], now: datetime) -> tuple[Applied, list[JobRef]]:
        return self.database.transaction(
            lambda connection: self.moves.cancel(connection, job_ids, now), idempotent=False
        )

    def prune_limits(self, before: datetime, limit: int) -> int:
        return self.flow.prune(before, limit)

    def set_job_state(self, job_id: int, source: JobState, target: JobState) -> bool | None:
        """Move a job from ``source`` to ``target`` if it is still there (``pause``/``resume``);
        ``None`` when there is no such job."""
        if not 0 < job_id <= MAX_JOB_ID:
            return None

        def work(connection: Connection) -> bool | None:
            if self.moves.move(connection, [job_id], source, target):
                return True
            return self._exists(connection, job_id)

        return self.database.transaction(work)

    def move_many(self, job_ids: Sequence[int], source: JobState, target: JobState) -> list[JobRef]:
        return self.database.transaction(
            lambda connection: self.moves.move(connection, job_ids, source, target)
        )

    def _exists(self, connection: Connection, job_id: int) -> bool | None:
        """``False`` (found, in another state) or ``None`` (no such job): what a compare-and-set
        that changed nothing answers."""
        found = connection.execute(select(self.table.c.id).where(self.table.c.id == job_id))
        return False if found.first() is not None else None


def _by_held(transitions: Sequence[Transition]) -> dict[int | None, list[Transition]]:
    """Successes by the attempt they were held at: one UPDATE serves each (nearly always one)."""
    groups: dict[int | None, list[Transition]] = {}
    for transition in transitions:
        groups.setdefault(transition.held, []).append(transition)
    return groups


def _held_at(jobs: Table, held: int | None) -> tuple[ColumnElement[bool], ...]:
    """The compare-and-set's condition on the attempt a transition was decided for."""
    return () if held is None else (jobs.c.attempt == held,)
