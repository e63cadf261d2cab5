"""What the processes sharing one database tell each other: workers, named leases, paused
queues."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import Select, Table, delete, insert, or_, select, update
from sqlalchemy.engine import Connection

from rota.core.model import WorkerInfo
from rota.store.database import Database
from rota.store.rows import to_worker, worker_values


class SqlCluster:
    def __init__(self, database: Database) -> None:
        self.database = database
        self.schema = database.schema

    def register_worker(self, worker: WorkerInfo) -> None:
        workers = self.schema.workers
        values = worker_values(worker)

        def work(connection: Connection) -> None:
            connection.execute(delete(workers).where(workers.c.id == worker.id))
            connection.execute(insert(workers).values(values))

        self.database.transaction(work)

    def unregister_worker(self, worker_id: str) -> None:
        workers = self.schema.workers
        self.database.write(delete(workers).where(workers.c.id == worker_id))

    def workers(self, alive_at: datetime) -> list[WorkerInfo]:
        """Each row's window is its own (two heartbeat intervals), so the rows are filtered
        here; the table stays small, since rows of long-dead workers are pruned.  A row that
        cannot be read is left out (and logged once)."""
        workers = self.schema.workers
        query = select(workers).order_by(workers.c.id)
        rows = (to_worker(row._mapping) for row in self.database.fetch(query))
        return [worker for worker in self.database.readable(rows) if worker.is_live(alive_at)]

    def prune_workers(self, before: datetime) -> int:
        workers = self.schema.workers
        return self.database.write(delete(workers).where(workers.c.heartbeat_at < before))

    def acquire_lease(self, name: str, owner: str, now: datetime, until: datetime) -> bool:
        """Take or renew the named lease unless another owner holds it past ``now``."""
        leases = self.schema.leases

        def work(connection: Connection) -> bool:
            free = or_(leases.c.until < now, leases.c.owner == owner)
            statement = update(leases).where(leases.c.name == name, free)
            if connection.execute(statement.values(owner=owner, until=until)).rowcount:
                return True
            row = {"name": name, "owner": owner, "until": until}
            connection.execute(self.database.dialect.insert_ignoring_duplicates(leases, [row]))
            holder = select(leases.c.owner).where(leases.c.name == name)
            return bool(connection.execute(holder).scalar_one() == owner)

        return self.database.transaction(work)

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
                    connection.execute(
                        self.database.dialect.insert_ignoring_duplicates(queues, [row])
                    )
            return changed

        return self.database.transaction(work)

    def paused_queues(self) -> set[str]:
        paused = paused_names(self.schema.queues)
        return self.database.transaction(lambda conn: set(conn.execute(paused).scalars()))


def paused_names(queues: Table) -> Select[Any]:
    """The names of the paused queues: read alone, or as the subquery of a claim and a look."""
    return select(queues.c.name).where(queues.c.paused)
