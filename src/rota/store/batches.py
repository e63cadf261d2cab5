"""Batches (``rota.batch``): a batch's jobs and its two callbacks written in one transaction,
and its jobs counted by state.

The callbacks are ordinary jobs linked to every job of the batch: ``on_success`` depends on
them (``depends_on``: it runs once all succeeded, and is cancelled with ``DEPENDENCY_FAILED``
as soon as one fails), ``on_complete`` waits for them whatever their end (``after``). Every job
of the batch, callbacks included, carries the batch's id (``Job.batch_id``, ``ctx.batch``);
the batch's row names its callbacks, which its counts leave out.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from datetime import datetime

from sqlalchemy import delete, func, select, update
from sqlalchemy.engine import Connection

from rota.core.model import JobState, NewJob
from rota.core.workflow import BatchStatus
from rota.store.database import Database
from rota.store.jobs import SqlJobs
from rota.store.values import QueuedBatch


class SqlBatches:
    def __init__(self, database: Database, jobs: SqlJobs) -> None:
        self.database = database
        self.jobs = jobs
        self.table = database.schema.batches

    def queue(
        self,
        members: Sequence[NewJob],
        on_success: NewJob | None,
        on_complete: NewJob | None,
        now: datetime,
    ) -> QueuedBatch:
        table = self.table
        row = {"namespace": self.database.namespace, "created_at": now, "size": len(members)}

        def work(connection: Connection) -> QueuedBatch:
            (batch,) = self.database.dialect.insert_ids(connection, table, [row])
            written = [replace(job, batch_id=batch) for job in members]
            ids = tuple(self.jobs.write(connection, written, now))
            callbacks: dict[str, int | None] = {"on_success": None, "on_complete": None}
            if on_success is not None:
                job = replace(on_success, batch_id=batch, depends_on=ids)
                callbacks["on_success"] = self.jobs.write(connection, [job], now)[0]
            if on_complete is not None:
                job = replace(on_complete, batch_id=batch, after=ids)
                callbacks["on_complete"] = self.jobs.write(connection, [job], now)[0]
            connection.execute(update(table).where(table.c.id == batch).values(callbacks))
            return QueuedBatch(batch, ids, callbacks["on_success"], callbacks["on_complete"])

        # Repeating an insert whose commit may have landed would queue the batch twice.
        return self.database.transaction(work, idempotent=False)

    def status(self, batch_id: int) -> BatchStatus | None:
        table, jobs = self.table, self.database.schema.jobs
        found = select(table.c.size, table.c.on_success, table.c.on_complete).where(
            table.c.id == batch_id, self.database.mine(table)
        )

        def work(connection: Connection) -> BatchStatus | None:
            row = connection.execute(found).first()
            if row is None:
                return None
            size, *callbacks = row
            members = (jobs.c.batch_id == batch_id, self.database.mine(jobs))
            others = [jobs.c.id.not_in([each for each in callbacks if each is not None])]
            counted = select(jobs.c.state, func.count()).where(*members, *others)
            states = {
                state: int(n) for state, n in connection.execute(counted.group_by(jobs.c.state))
            }
            live = sum(n for state, n in states.items() if not JobState.stored(state).is_final)
            return BatchStatus(batch_id, size, states, finished=live == 0)

        return self.database.transaction(work)

    def prune(self, before: datetime, limit: int) -> int:
        """Delete up to ``limit`` batches made before ``before`` none of whose jobs is left;
        how many."""
        table, jobs = self.table, self.database.schema.jobs
        members = select(jobs.c.id).where(jobs.c.batch_id == table.c.id)
        stale = (
            select(table.c.id)
            .where(self.database.mine(table), table.c.created_at < before, ~members.exists())
            .limit(limit)
        )

        def work(connection: Connection) -> int:
            ids = list(connection.execute(stale).scalars())
            if not ids:
                return 0
            return int(connection.execute(delete(table).where(table.c.id.in_(ids))).rowcount)

        return self.database.transaction(work)
