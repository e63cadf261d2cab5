"""Jobs with a unique key: one live job per key and task, a burst debounced into one run, and a
key kept taken for a while after its job finished (``queue(unique_key=, debounce=,
unique_for=)``).

The unique index decides under concurrency: an insert that meets the key writes nothing and
learns so from the dialect (``insert_unique``), then reads who holds the key.  A finished job
holds its key only when it was queued with ``unique_for`` (``rows.released_key``); once that
period is over the next caller frees the key in its own transaction and inserts.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import Row, Select, Table, select, update
from sqlalchemy.engine import Connection

from rota.core.model import JobState
from rota.store.database import Database
from rota.store.rows import FINAL

INSERT_ROUNDS = 3
"""Inserts tried while the key's holder keeps ending between the insert and the read."""
DEBOUNCED = ("run_at", "payload", "concurrency_key", "rate_key")
"""What a debounced call replaces in the pending job that holds its key."""


class UniqueKeys:
    def __init__(self, database: Database) -> None:
        self.database = database
        self.table = database.schema.jobs

    def insert(
        self, connection: Connection, row: dict[str, Any], debounce: int | None, now: datetime
    ) -> tuple[int, bool]:
        """The id of the job holding ``row``'s key, and whether it is ``row``, just inserted.
        A pending holder of a ``debounce`` call takes the call's ``run_at`` and arguments."""
        for _ in range(INSERT_ROUNDS):
            inserted = self.database.dialect.insert_unique(connection, self.table, row)
            if inserted is not None:
                return inserted, True
            holder = self.holder(connection, row, now)
            if holder is None:
                continue
            if debounce is not None and holder.state == JobState.PENDING.value:
                jobs = self.table
                connection.execute(
                    update(jobs)
                    .where(jobs.c.id == holder.id, jobs.c.state == JobState.PENDING.value)
                    .values({column: row[column] for column in DEBOUNCED})
                )
            return int(holder.id), False
        raise AssertionError("a unique key changed hands on every insert")  # pragma: no cover

    def holder(
        self, connection: Connection, row: Mapping[str, Any], now: datetime
    ) -> Row[Any, Any, Any, Any] | None:
        """The job that holds ``row``'s key now; a finished job whose ``unique_for`` is over
        is freed of it (then ``None``)."""
        jobs = self.table
        columns = (jobs.c.id, jobs.c.state, jobs.c.finished_at, jobs.c.unique_for)
        found = connection.execute(holding_key(jobs, row).with_only_columns(*columns)).first()
        if found is None or not _expired(found, now):
            return found
        connection.execute(
            update(jobs)
            .where(jobs.c.id == found.id, jobs.c.state.in_(FINAL))
            .values(unique_key=None)
        )
        return None


def _expired(holder: Row[Any, Any, Any, Any], now: datetime) -> bool:
    if holder.state not in FINAL or holder.unique_for is None or holder.finished_at is None:
        return False
    return bool(holder.finished_at + timedelta(seconds=holder.unique_for) <= now)


def holding_key(jobs: Table, row: Mapping[str, Any]) -> Select[Any]:
    """The id of the job that holds ``row``'s unique key: of its task, in its namespace."""
    return select(jobs.c.id).where(
        jobs.c.namespace == row["namespace"],
        jobs.c.task == row["task"],
        jobs.c.unique_key == row["unique_key"],
    )
