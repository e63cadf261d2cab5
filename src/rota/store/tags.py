"""A job's tags: a row per tag in a table of their own, so that ``find(tags=...)`` seeks an
index (namespace, tag, newest job) instead of scanning a JSON column."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from sqlalchemy import Select, delete, select
from sqlalchemy.engine import Connection

from rota.store.database import Database

CHUNK = 500
"""Job ids one ``IN`` list names."""


class JobTags:
    def __init__(self, database: Database) -> None:
        self.database = database
        self.table = database.schema.job_tags

    def write(self, connection: Connection, tagged: Iterable[tuple[int, Sequence[str]]]) -> None:
        """Each job's tags, in the transaction that writes the job."""
        namespace = self.database.namespace
        rows = [
            {"job_id": job_id, "tag": tag, "namespace": namespace}
            for job_id, tags in tagged
            for tag in tags
        ]
        if rows:
            connection.execute(self.database.dialect.insert_ignoring_duplicates(self.table), rows)

    def replace(self, connection: Connection, job_id: int, tags: Sequence[str]) -> None:
        connection.execute(delete(self.table).where(self.table.c.job_id == job_id))
        self.write(connection, [(job_id, tags)])

    def of(self, connection: Connection, job_ids: Sequence[int]) -> dict[int, tuple[str, ...]]:
        """The tags of each job that has some, in the order of their names."""
        table, found = self.table, dict[int, list[str]]()
        for start in range(0, len(job_ids), CHUNK):
            chunk = job_ids[start : start + CHUNK]
            query = select(table.c.job_id, table.c.tag).where(table.c.job_id.in_(chunk))
            for job_id, tag in connection.execute(query.order_by(table.c.job_id, table.c.tag)):
                found.setdefault(job_id, []).append(tag)
        return {job_id: tuple(tags) for job_id, tags in found.items()}

    def forget(self, connection: Connection, job_ids: Sequence[int]) -> None:
        """The tags of jobs being deleted (pruned, or by ``delete``)."""
        for start in range(0, len(job_ids), CHUNK):
            chunk = job_ids[start : start + CHUNK]
            connection.execute(delete(self.table).where(self.table.c.job_id.in_(chunk)))

    def forget_where(self, connection: Connection, job_ids: Select[Any]) -> None:
        """The tags of the jobs ``job_ids`` selects, on the server (a prune's batch, whose ids
        never cross the connection)."""
        connection.execute(delete(self.table).where(self.table.c.job_id.in_(job_ids)))
