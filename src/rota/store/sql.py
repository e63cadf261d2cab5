"""SqlStore: the ``Store`` protocol on a SQLAlchemy engine, for every supported dialect."""

from __future__ import annotations

import json
import logging
import random
import time
from collections.abc import Callable, Iterator, Sequence
from datetime import datetime
from typing import Any, TypeVar

from sqlalchemy import Row, Select, and_, delete, func, insert, or_, select, true, update
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.sql.elements import ColumnElement

from rota.core import payload
from rota.core.clock import as_utc
from rota.core.model import (
    DEFAULT_QUEUE,
    MAX_JOB_ID,
    AttemptError,
    Counts,
    Job,
    JobState,
    NewJob,
    WorkerInfo,
)
from rota.core.transitions import Transition
from rota.errors import InvalidArguments, TransientStoreError
from rota.store.dialects import Dialect
from rota.store.schedules import SqlSchedules
from rota.store.schema import Schema, build_schema

T = TypeVar("T")
logger = logging.getLogger("rota.store")
CONFLICT_ATTEMPTS = 6
CONFLICT_BUDGET = 5.0
INSERT_CHUNK = 1000
STATEMENT_BYTES = 500_000
ROW_OVERHEAD_BYTES = 1_000
RUNNING = JobState.RUNNING.value


class SqlStore:
    def __init__(self, engine: Engine, dialect: Dialect, table_prefix: str = "rota_") -> None:
        self.engine = engine
        self.dialect = dialect
        self.schema: Schema = build_schema(table_prefix)
        self.schedules = SqlSchedules(self)

    def _transaction(self, work: Callable[[Connection], T], *, idempotent: bool = True) -> T:
        """Run ``work`` in one transaction, repeating it after a deadlock or lock-wait timeout.

        Those undo the whole transaction, so repeating is always safe and callers never see
        them unless they persist: up to six attempts, but past the first repeat only within
        ``CONFLICT_BUDGET`` seconds, since each lock wait may itself last a server timeout.
        After a dropped connection the commit may have happened: ``work`` is repeated once, on
        a fresh connection, only when it is ``idempotent`` (its write and its answer stay right).
        """
        started = time.monotonic()
        attempt = 1
        while True:
            try:
                with self.dialect.translate_errors(), self.engine.begin() as connection:
                    return work(connection)
            except TransientStoreError as error:
                if error.rolled_back and may_repeat(attempt, time.monotonic() - started):
                    delay = conflict_delay(attempt)
                    logger.debug("%s; repeating the transaction in %.3f s", error, delay)
                    time.sleep(delay)
                elif not error.rolled_back and idempotent and attempt == 1:
                    logger.info("%s; repeating the transaction on a new connection", error)
                else:
                    raise
            attempt += 1

    def enqueue(
        self, jobs: Sequence[NewJob], now: datetime, connection: Connection | None = None
    ) -> list[int]:
        rows = [self._job_values(job, now) for job in jobs]
        if connection is not None:
            with self.dialect.translate_errors():
                return self._insert_all(connection, rows)
        # Repeating an insert whose commit may have landed would queue the jobs twice.
        return self._transaction(lambda conn: self._insert_all(conn, rows), idempotent=False)

    def _insert_all(self, connection: Connection, rows: list[dict[str, Any]]) -> list[int]:
        """Plain rows in bulk; rows with a unique key one by one, reusing a live duplicate."""
        plain = [row for row in rows if row["unique_key"] is None]
        ids = dict(zip((id(row) for row in plain), self._insert(connection, plain), strict=True))
        for row in rows:
            if row["unique_key"] is not None:
                ids[id(row)] = self._insert_unique(connection, row)
        return [ids[id(row)] for row in rows]

    def _insert_unique(self, connection: Connection, row: dict[str, Any]) -> int:
        """Insert unless a pending or running job holds the key; either way return its id.

        The unique index decides under concurrency: a racing insert waits for the winner's
        commit and then skips, so both callers read the same id.
        """
        table = self.schema.jobs
        connection.execute(self.dialect.insert_ignoring_duplicates(table, [row]))
        query = select(table.c.id).where(
            table.c.task == row["task"], table.c.unique_key == row["unique_key"]
        )
        return int(connection.execute(query).scalar_one())

    def _insert(self, connection: Connection, rows: list[dict[str, Any]]) -> list[int]:
        """Multi-row INSERTs (SQLAlchemy batches an executemany into them), ids in order."""
        if not rows:
            return []
        table = self.schema.jobs
        if self.dialect.returning:
            statement = insert(table).returning(table.c.id, sort_by_parameter_order=True)
            return list(connection.execute(statement, rows).scalars())
        ids: list[int] = []
        step = self._id_step(connection) if len(rows) > 1 else 1
        for chunk in _statement_sized(rows):
            if len(chunk) == 1:
                ids.append(connection.execute(insert(table), chunk[0]).lastrowid)
                continue
            connection.execute(insert(table), chunk)
            first = int(connection.exec_driver_sql("SELECT LAST_INSERT_ID()").scalar_one())
            ids.extend(range(first, first + len(chunk) * step, step))
        return ids

    @staticmethod
    def _id_step(connection: Connection) -> int:
        """MySQL's id increment (above 1 on Galera and other multi-primary set-ups)."""
        return int(connection.exec_driver_sql("SELECT @@auto_increment_increment").scalar_one())

    @staticmethod
    def _job_values(job: NewJob, now: datetime) -> dict[str, Any]:
        return {
            "task": job.task,
            "queue": job.queue,
            "priority": job.priority,
            "state": JobState.PENDING.value,
            "payload": job.payload,
            "attempt": 0,
            "max_attempts": job.max_attempts,
            "run_at": job.run_at,
            "created_at": now,
            "cancel_requested": False,
            "schedule": job.schedule,
            "scheduled_at": job.scheduled_at,
            "unique_key": job.unique_key,
        }

    def claim_query(
        self, queues: Sequence[str], tasks: Sequence[str], limit: int, now: datetime
    ) -> Select[Any]:
        """The candidate query of ``claim``, exposed so tests can EXPLAIN it."""
        jobs = self.schema.jobs
        queue_match = jobs.c.queue == queues[0] if len(queues) == 1 else jobs.c.queue.in_(queues)
        query = (
            select(jobs)
            .where(
                jobs.c.state == JobState.PENDING.value,
                queue_match,
                jobs.c.run_at <= now,
                jobs.c.task.in_(tasks),
            )
            .order_by(jobs.c.priority, jobs.c.run_at, jobs.c.id)
            .limit(limit)
        )
        return self.dialect.lock_for_claim(query)

    def claim(
        self,
        worker_id: str,
        queues: Sequence[str],
        tasks: Sequence[str],
        limit: int,
        now: datetime,
        lease_until: datetime,
    ) -> list[Job]:
        if limit <= 0 or not queues or not tasks:
            return []
        jobs = self.schema.jobs
        changes = {
            "state": RUNNING,
            "attempt": jobs.c.attempt + 1,
            "started_at": now,
            "lease_owner": worker_id,
            "lease_until": lease_until,
        }

        def work(connection: Connection) -> list[Job]:
            paused = self._paused_queues(connection)
            if paused:
                open_queues = [queue for queue in queues if queue not in paused]
                if not open_queues:
                    return []
                candidates = self.claim_query(open_queues, tasks, limit, now)
            else:
                candidates = self.claim_query(queues, tasks, limit, now)
            if self.dialect.returning:
                ids = candidates.with_only_columns(jobs.c.id)
                statement = (
                    update(jobs).where(jobs.c.id.in_(ids)).values(changes).returning(*jobs.c)
                )
                claimed = [_to_job(row) for row in connection.execute(statement)]
                return sorted(claimed, key=lambda job: (job.priority, job.run_at, job.id))
            rows = connection.execute(candidates).all()
            if not rows:
                return []
            connection.execute(
                update(jobs).where(jobs.c.id.in_([row.id for row in rows])).values(changes)
            )
            return [
                _to_job(
                    row,
                    state=RUNNING,
                    attempt=row.attempt + 1,
                    started_at=now,
                    lease_owner=worker_id,
                    lease_until=lease_until,
                )
                for row in rows
            ]

        return self._transaction(work)

    def complete(self, worker_id: str, transitions: Sequence[Transition], now: datetime) -> int:
        jobs = self.schema.jobs
        held = and_(jobs.c.state == RUNNING, jobs.c.lease_owner == worker_id)
        return self._transaction(lambda conn: self._apply(conn, transitions, held, now))

    def rescue(self, transitions: Sequence[Transition], now: datetime) -> int:
        jobs = self.schema.jobs
        expired = and_(jobs.c.state == RUNNING, jobs.c.lease_until < now)
        return self._transaction(lambda conn: self._apply(conn, transitions, expired, now))

    def _apply(
        self,
        connection: Connection,
        transitions: Sequence[Transition],
        guard: ColumnElement[bool],
        now: datetime,
    ) -> int:
        """Successes share one UPDATE; every other transition writes its own row."""
        jobs = self.schema.jobs
        released = {"lease_owner": None, "lease_until": None, "cancel_requested": False}
        finished = {**released, "unique_key": None}
        applied = 0
        succeeded = [t.job_id for t in transitions if t.target is JobState.SUCCEEDED]
        if succeeded:
            applied += connection.execute(
                update(jobs)
                .where(jobs.c.id.in_(succeeded), guard)
                .values(state=JobState.SUCCEEDED.value, finished_at=now, **finished)
            ).rowcount
        for t in transitions:
            if t.target is JobState.SUCCEEDED:
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
                values["errors"] = _errors_json(t.errors)
            applied += connection.execute(
                update(jobs).where(jobs.c.id == t.job_id, guard).values(values)
            ).rowcount
        return applied

    def heartbeat(
        self, worker_id: str, job_ids: Sequence[int], now: datetime, lease_until: datetime
    ) -> tuple[set[int], set[int]]:
        jobs, workers = self.schema.jobs, self.schema.workers

        def work(connection: Connection) -> tuple[set[int], set[int]]:
            connection.execute(
                update(workers).where(workers.c.id == worker_id).values(heartbeat_at=now)
            )
            if not job_ids:
                return set(), set()
            held = and_(
                jobs.c.id.in_(job_ids), jobs.c.state == RUNNING, jobs.c.lease_owner == worker_id
            )
            connection.execute(update(jobs).where(held).values(lease_until=lease_until))
            rows = connection.execute(select(jobs.c.id, jobs.c.cancel_requested).where(held))
            still_held: set[int] = set()
            cancel: set[int] = set()
            for job_id, cancel_requested in rows:
                still_held.add(job_id)
                if cancel_requested:
                    cancel.add(job_id)
            return cancel, set(job_ids) - still_held

        return self._transaction(work)

    def expired_leases(self, now: datetime, limit: int) -> list[Job]:
        jobs = self.schema.jobs
        query = (
            select(jobs)
            .where(jobs.c.state == RUNNING, jobs.c.lease_until < now)
            .order_by(jobs.c.lease_until)
            .limit(limit)
        )
        return self._transaction(lambda conn: [_to_job(row) for row in conn.execute(query)])

    def counts(self) -> Counts:
        """Jobs per state, queue and task, counted by the database in one GROUP BY."""
        jobs = self.schema.jobs
        columns = (jobs.c.state, jobs.c.queue, jobs.c.task)
        query = select(*columns, func.count()).group_by(*columns)
        rows = self._transaction(lambda conn: conn.execute(query).all())
        return Counts.from_rows((state, queue, task, int(n)) for state, queue, task, n in rows)

    def job(self, job_id: int) -> Job | None:
        if not 0 < job_id <= MAX_JOB_ID:
            return None
        jobs = self.schema.jobs
        query = select(jobs).where(jobs.c.id == job_id)
        row = self._transaction(lambda conn: conn.execute(query).first())
        return _to_job(row) if row is not None else None

    def jobs(
        self,
        states: Sequence[JobState] = (),
        task: str | None = None,
        queue: str | None = None,
        limit: int | None = 100,
    ) -> list[Job]:
        table = self.schema.jobs
        query = select(table).order_by(table.c.id.desc()).limit(limit)
        if states:
            query = query.where(table.c.state.in_([state.value for state in states]))
        if task is not None:
            query = query.where(table.c.task == task)
        if queue is not None:
            query = query.where(table.c.queue == queue)
        return self._transaction(lambda conn: [_to_job(row) for row in conn.execute(query)])

    def cancel(self, job_id: int, now: datetime) -> bool | None:
        if not 0 < job_id <= MAX_JOB_ID:
            return None
        jobs = self.schema.jobs

        def work(connection: Connection) -> bool | None:
            waiting = (JobState.PENDING.value, JobState.PAUSED.value)
            pending = and_(jobs.c.id == job_id, jobs.c.state.in_(waiting))
            if connection.execute(
                update(jobs)
                .where(pending)
                .values(state=JobState.CANCELLED.value, finished_at=now, unique_key=None)
            ).rowcount:
                return True
            running = and_(jobs.c.id == job_id, jobs.c.state == RUNNING)
            if connection.execute(
                update(jobs).where(running).values(cancel_requested=true())
            ).rowcount:
                return True
            found = connection.execute(select(jobs.c.id).where(jobs.c.id == job_id)).first()
            return False if found is not None else None

        return self._transaction(work, idempotent=False)

    def set_job_state(self, job_id: int, source: JobState, target: JobState) -> bool | None:
        """Move a job from ``source`` to ``target`` if it is still there (``pause``/``resume``);
        ``None`` when there is no such job."""
        if not 0 < job_id <= MAX_JOB_ID:
            return None
        jobs = self.schema.jobs

        def work(connection: Connection) -> bool | None:
            moved = connection.execute(
                update(jobs)
                .where(jobs.c.id == job_id, jobs.c.state == source.value)
                .values(state=target.value)
            ).rowcount
            if moved:
                return True
            found = connection.execute(select(jobs.c.id).where(jobs.c.id == job_id)).first()
            return False if found is not None else None

        return self._transaction(work)

    def set_queues_paused(self, names: Sequence[str], paused: bool, now: datetime) -> list[str]:
        """Pause or resume queues by name; return those whose state changed."""
        queues = self.schema.queues

        def work(connection: Connection) -> list[str]:
            known = {
                name: bool(flag)
                for name, flag in connection.execute(
                    select(queues.c.name, queues.c.paused).where(queues.c.name.in_(names))
                )
            }
            changed = [name for name in dict.fromkeys(names) if known.get(name, False) != paused]
            for name in changed:
                if name in known:
                    connection.execute(
                        update(queues)
                        .where(queues.c.name == name)
                        .values(paused=paused, updated_at=now)
                    )
                else:
                    row = {"name": name, "paused": paused, "updated_at": now}
                    connection.execute(self.dialect.insert_ignoring_duplicates(queues, [row]))
            return changed

        return self._transaction(work)

    def paused_queues(self) -> set[str]:
        return self._transaction(self._paused_queues)

    def _paused_queues(self, connection: Connection) -> set[str]:
        queues = self.schema.queues
        return set(connection.execute(select(queues.c.name).where(queues.c.paused)).scalars())

    def waiting_queues(self) -> set[str]:
        """Queues with pending or paused jobs, read from the claim index."""
        jobs = self.schema.jobs
        waiting = (JobState.PENDING.value, JobState.PAUSED.value)
        query = select(jobs.c.queue).where(jobs.c.state.in_(waiting)).distinct()
        return set(self._transaction(lambda conn: conn.execute(query).scalars().all()))

    def retry(self, transition: Transition) -> bool:
        jobs = self.schema.jobs
        statement = (
            update(jobs)
            .where(jobs.c.id == transition.job_id, jobs.c.state == transition.source.value)
            .values(
                state=transition.target.value,
                attempt=transition.attempt,
                run_at=transition.run_at,
                finished_at=None,
                cancel_requested=False,
            )
        )
        changed = self._transaction(lambda conn: conn.execute(statement).rowcount, idempotent=False)
        return bool(changed)

    def acquire_lease(self, name: str, owner: str, now: datetime, until: datetime) -> bool:
        """Take or renew the named lease unless another owner holds it past ``now``."""
        leases = self.schema.leases

        def work(connection: Connection) -> bool:
            free = or_(leases.c.until < now, leases.c.owner == owner)
            statement = update(leases).where(leases.c.name == name, free)
            if connection.execute(statement.values(owner=owner, until=until)).rowcount:
                return True
            row = {"name": name, "owner": owner, "until": until}
            connection.execute(self.dialect.insert_ignoring_duplicates(leases, [row]))
            holder = select(leases.c.owner).where(leases.c.name == name)
            return bool(connection.execute(holder).scalar_one() == owner)

        return self._transaction(work)

    def prune(self, states: Sequence[JobState], before: datetime, limit: int) -> int:
        """Delete up to ``limit`` jobs in ``states`` that finished before ``before``, oldest
        first, in one short transaction."""
        jobs = self.schema.jobs
        oldest = (
            select(jobs.c.id)
            .where(jobs.c.finished_at < before, jobs.c.state.in_([s.value for s in states]))
            .order_by(jobs.c.finished_at)
            .limit(limit)
        )

        def work(connection: Connection) -> int:
            ids = list(connection.execute(oldest).scalars())
            if ids:
                connection.execute(delete(jobs).where(jobs.c.id.in_(ids)))
            return len(ids)

        return self._transaction(work)

    def register_worker(self, worker: WorkerInfo) -> None:
        workers = self.schema.workers
        values = {
            "id": worker.id,
            "host": worker.host,
            "pid": worker.pid,
            "queues": json.dumps(list(worker.queues)),
            "tasks": json.dumps(
                {task: worker.task_queues.get(task, DEFAULT_QUEUE) for task in worker.tasks}
            ),
            "concurrency": worker.concurrency,
            "started_at": worker.started_at,
            "heartbeat_at": worker.heartbeat_at,
        }

        def work(connection: Connection) -> None:
            connection.execute(delete(workers).where(workers.c.id == worker.id))
            connection.execute(insert(workers).values(values))

        self._transaction(work)

    def unregister_worker(self, worker_id: str) -> None:
        workers = self.schema.workers
        statement = delete(workers).where(workers.c.id == worker_id)
        self._transaction(lambda conn: conn.execute(statement))

    def workers(self, alive_since: datetime) -> list[WorkerInfo]:
        workers = self.schema.workers
        query = select(workers).where(workers.c.heartbeat_at >= alive_since).order_by(workers.c.id)
        rows = self._transaction(lambda conn: conn.execute(query).all())
        return [_to_worker(row) for row in rows]

    def server_time(self) -> datetime | None:
        query = self.dialect.server_time_query()
        if query is None:
            return None
        value = self._transaction(lambda conn: conn.exec_driver_sql(query).scalar_one())
        return as_utc(value)


def _to_worker(row: Row[Any]) -> WorkerInfo:
    task_queues: dict[str, str] = json.loads(row.tasks)
    return WorkerInfo(
        id=row.id,
        host=row.host,
        pid=row.pid,
        queues=tuple(json.loads(row.queues)),
        tasks=tuple(task_queues),
        task_queues=task_queues,
        concurrency=row.concurrency,
        started_at=row.started_at,
        heartbeat_at=row.heartbeat_at,
    )


def _statement_sized(rows: list[dict[str, Any]]) -> Iterator[list[dict[str, Any]]]:
    """Chunks that the MySQL driver sends as one INSERT statement each.

    ``LAST_INSERT_ID()`` names the first id of the last statement only, so no chunk may be
    split by the driver's statement-size limit (PyMySQL: 1,024,000 bytes).
    """
    chunk: list[dict[str, Any]] = []
    size = 0
    for row in rows:
        row_size = len(row["payload"]) * 4 + ROW_OVERHEAD_BYTES  # UTF-8 and escaping, at worst
        if chunk and (len(chunk) == INSERT_CHUNK or size + row_size > STATEMENT_BYTES):
            yield chunk
            chunk, size = [], 0
        chunk.append(row)
        size += row_size
    if chunk:
        yield chunk


def _errors_json(errors: Sequence[AttemptError]) -> str:
    return json.dumps([error.to_json() for error in errors], ensure_ascii=False)


def _to_job(row: Row[Any], **override: Any) -> Job:
    data = dict(row._mapping)
    data.update(override)
    try:
        args, kwargs, trace = payload.decode(data["payload"])
        unreadable = None
    except InvalidArguments as error:
        args, kwargs, trace, unreadable = (), {}, None, str(error)
    errors = tuple(AttemptError.from_json(item) for item in json.loads(data["errors"] or "[]"))
    return Job(
        id=data["id"],
        task=data["task"],
        queue=data["queue"],
        args=args,
        kwargs=kwargs,
        state=JobState(data["state"]),
        attempt=data["attempt"],
        max_attempts=data["max_attempts"],
        priority=data["priority"],
        run_at=data["run_at"],
        created_at=data["created_at"],
        started_at=data["started_at"],
        finished_at=data["finished_at"],
        schedule=data["schedule"],
        scheduled_at=data["scheduled_at"],
        errors=errors,
        lease_owner=data["lease_owner"],
        lease_until=data["lease_until"],
        cancel_requested=bool(data["cancel_requested"]),
        unique_key=data["unique_key"],
        trace=trace,
        payload_error=unreadable,
    )


def may_repeat(attempt: int, elapsed: float) -> bool:
    return attempt < CONFLICT_ATTEMPTS and (attempt == 1 or elapsed < CONFLICT_BUDGET)


def conflict_delay(attempt: int) -> float:
    """10 ms doubling per attempt, jittered so that the two sides of a deadlock drift apart."""
    return float(0.01 * 2 ** (attempt - 1) * random.uniform(0.5, 1.5))
