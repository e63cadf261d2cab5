"""A job's saved workflow steps (``StepStore``): read at once for a run to replay, and each
written as it finishes, fenced by the job's lease.

The fence is the job row itself: a step is saved in a transaction that first marks the job
``has_steps`` where it is still ``running`` at the attempt and under the lease owner that ran
the step. That update locks the row, so a rescue or a cancel waits for the step's commit or
comes first and leaves the step unsaved; a worker that lost its lease writes nothing.
``has_steps`` also tells the prune which jobs have steps to delete with them (``forget``).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import datetime

from sqlalchemy import delete, insert, select, update
from sqlalchemy.engine import Connection

from rota.core.model import JobState
from rota.core.steps import Step
from rota.errors import StoreError
from rota.store.database import Database


class SqlSteps:
    def __init__(self, database: Database) -> None:
        self.database = database
        self.jobs = database.schema.jobs
        self.table = database.schema.steps

    def saved(self, job_id: int) -> list[Step]:
        steps = self.table
        mine = select(self.jobs.c.id).where(self.jobs.c.id == job_id, self.database.mine(self.jobs))
        query = (
            select(steps.c.name, steps.c.result, steps.c.finished_at)
            .where(steps.c.job_id == job_id, steps.c.job_id.in_(mine))
            .order_by(steps.c.finished_at, steps.c.name)
        )
        return [
            Step(name, _decoded(job_id, name, result), finished_at)
            for name, result, finished_at in self.database.fetch(query)
        ]

    def save(
        self,
        job_id: int,
        owner: str,
        attempt: int,
        name: str,
        result: str | None,
        now: datetime,
    ) -> bool:
        jobs = self.jobs
        held = (
            update(jobs)
            .where(
                jobs.c.id == job_id,
                self.database.mine(jobs),
                jobs.c.state == JobState.RUNNING.value,
                jobs.c.lease_owner == owner,
                jobs.c.attempt == attempt,
            )
            .values(has_steps=True)
        )
        row = {"job_id": job_id, "name": name, "result": result, "finished_at": now}

        def work(connection: Connection) -> bool:
            if connection.execute(held).rowcount != 1:
                return False
            connection.execute(insert(self.table).values(row))
            return True

        # Not repeated after a lost connection: the step may have been saved.
        return self.database.transaction(work, idempotent=False)

    def forget(self, connection: Connection, job_ids: Sequence[int]) -> None:
        """Delete the steps of ``job_ids``, jobs being deleted in the same transaction."""
        if job_ids:
            connection.execute(delete(self.table).where(self.table.c.job_id.in_(job_ids)))


def _decoded(job_id: int, name: str, stored: str | None) -> object:
    if stored is None:
        return None
    try:
        return json.loads(stored)
    except ValueError as error:
        raise StoreError(f"job {job_id}'s saved step {name!r} cannot be read: {error}") from None
