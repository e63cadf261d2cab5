"""Changing one job by hand: ``update_job`` (a compare-and-set on a job no worker has
claimed), ``replay`` (a copy of a finished job, linked to it), and the record a bulk action
leaves."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import insert, select, update
from sqlalchemy.engine import Connection

from rota.core.model import MAX_JOB_ID
from rota.store.database import Database
from rota.store.rows import FINAL, UNSTARTED
from rota.store.tags import JobTags

COPIED = (
    *("namespace", "task", "queue", "priority", "payload", "max_attempts", "meta"),
    *("concurrency_key", "rate_key"),
)
"""What a replay takes from the job it copies: not its key, its schedule nor its history."""


class SqlEdits:
    def __init__(self, database: Database) -> None:
        self.database = database
        self.jobs = database.schema.jobs
        self.tags = JobTags(database)

    def update(
        self, job_id: int, values: Mapping[str, Any], tags: Sequence[str] | None
    ) -> bool | None:
        """Write ``values`` (and replace the tags, unless ``None``) while the job is pending or
        paused; ``False`` once claimed or ended, ``None`` for no such job."""
        if not 0 < job_id <= MAX_JOB_ID:
            return None
        jobs = self.jobs

        def work(connection: Connection) -> bool | None:
            unclaimed = (jobs.c.id == job_id, jobs.c.state.in_(UNSTARTED))
            locked = select(jobs.c.id).where(*unclaimed).with_for_update()
            if connection.execute(locked).first() is None:
                exists = connection.execute(select(jobs.c.id).where(jobs.c.id == job_id))
                return None if exists.first() is None else False
            if values:
                connection.execute(update(jobs).where(*unclaimed).values(dict(values)))
            if tags is not None:
                self.tags.replace(connection, job_id, tags)
            return True

        return self.database.transaction(work, idempotent=False)

    def replay(self, job_id: int, now: datetime) -> int | None:
        """A new pending job copying finished job ``job_id`` (its tags too), due now and
        linked to it by ``replay_of``; ``None`` unless that job exists and is final."""
        if not 0 < job_id <= MAX_JOB_ID:
            return None
        jobs = self.jobs

        def work(connection: Connection) -> int | None:
            query = select(*(jobs.c[column] for column in COPIED)).where(
                jobs.c.id == job_id, jobs.c.state.in_(FINAL)
            )
            found = connection.execute(query).first()
            if found is None:
                return None
            row = {
                **found._mapping,
                **{"state": "pending", "attempt": 0, "run_at": now, "created_at": now},
                **{"replay_of": job_id, "cancel_requested": False},
            }
            new_id = self.database.dialect.insert_ids(connection, jobs, [row])[0]
            tags = self.tags.of(connection, [job_id]).get(job_id, ())
            self.tags.write(connection, [(new_id, tags)])
            return new_id

        return self.database.transaction(work, idempotent=False)

    def record(
        self, action: str, matching: Mapping[str, Any], actor: str, count: int, now: datetime
    ) -> None:
        """Who ran a bulk action, on which filter, and how many jobs it changed."""
        table = self.database.schema.bulk_actions
        row = {
            "namespace": self.database.namespace,
            "at": now,
            "actor": actor,
            "action": action,
            "filter": json.dumps(dict(matching), ensure_ascii=False, default=str),
            "jobs": count,
        }
        self.database.write(insert(table).values(row), idempotent=False)
