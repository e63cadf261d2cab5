"""What the processes sharing one database tell each other: workers, named leases, paused
queues."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import Select, and_, delete, insert, or_, select, union, update
from sqlalchemy.engine import Connection
from sqlalchemy.sql.elements import ColumnElement

from rota.core.model import WorkerInfo
from rota.store.database import Database
from rota.store.worker_rows import to_worker, worker_values


class SqlCluster:
    def __init__(self, database: Database) -> None:
        self.database = database
        self.schema = database.schema

    def register_worker(self, worker: WorkerInfo) -> None:
        workers = self.schema.workers
        values = worker_values(worker) | {"namespace": self.database.namespace}

        def work(connection: Connection) -> None:
            connection.execute(delete(workers).where(workers.c.id == worker.id))
            connection.execute(insert(workers).values(values))

        self.database.transaction(work)

    def unregister_worker(self, worker_id: str) -> None:
        workers = self.schema.workers
        self.database.write(delete(workers).where(workers.c.id == worker_id))

    def workers(self, alive_at: datetime) -> list[WorkerInfo]:
        """The namespace's live workers.  Each row's window is its own (two heartbeat
        intervals), so the rows are filtered here; the table stays small, since rows of
        long-dead workers are pruned.  A row that cannot be read is left out (and logged
        once)."""
        workers = self.schema.workers
        query = select(workers).where(self.database.mine(workers)).order_by(workers.c.id)
        rows = (to_worker(row._mapping) for row in self.database.fetch(query))
        return [worker for worker in self.database.readable(rows) if worker.is_live(alive_at)]

    def prune_workers(self, before: datetime) -> int:
        workers = self.schema.workers
        dead = and_(self.database.mine(workers), workers.c.heartbeat_at < before)
        return self.database.write(delete(workers).where(dead))

    def acquire_lease(self, name: str, owner: str, now: datetime, until: datetime) -> bool:
        """Take or renew the namespace's named lease unless another owner holds it past
        ``now``."""
        leases, namespace = self.schema.leases, self.database.namespace
        named = and_(self.database.mine(leases), leases.c.name == name)

        def work(connection: Connection) -> bool:
            free = or_(leases.c.until < now, leases.c.owner == owner)
            statement = update(leases).where(named, free)
            if connection.execute(statement.values(owner=owner, until=until)).rowcount:
                return True
            row = {"namespace": namespace, "name": name, "owner": owner, "until": until}
            connection.execute(self.database.dialect.insert_ignoring_duplicates(leases), [row])
            holder = select(leases.c.owner).where(named)
            return bool(connection.execute(holder).scalar_one() == owner)

        return self.database.transaction(work)

    def set_queues_paused(self, names: Sequence[str], paused: bool, now: datetime) -> list[str]:
        """Pause or resume the namespace's queues by name; return those whose state changed."""
        queues, mine = self.schema.queues, self.database.mine(self.schema.queues)
        namespace = self.database.namespace

        def work(connection: Connection) -> list[str]:
            known = {
                name: bool(flag)
                for name, flag in connection.execute(
                    select(queues.c.name, queues.c.paused).where(mine, queues.c.name.in_(names))
                )
            }
            changed = [name for name in dict.fromkeys(names) if known.get(name, False) != paused]
            for name in changed:
                if name in known:
                    connection.execute(
                        update(queues)
                        .where(mine, queues.c.name == name)
                        .values(paused=paused, updated_at=now)
                    )
                else:
                    row = {
                        "namespace": namespace,
                        "name": name,
                        "paused": paused,
                        "updated_at": now,
                    }
                    connection.execute(
                        self.database.dialect.insert_ignoring_duplicates(queues), [row]
                    )
            return changed

        return self.database.transaction(work)

    def paused_queues(self) -> set[str]:
        paused = paused_names(self.database)
        return self.database.transaction(lambda conn: set(conn.execute(paused).scalars()))

    def namespaces(self) -> list[str]:
        tables = (self.schema.schedules, self.schema.workers, self.schema.queues)
        found = union(*(select(table.c.namespace) for table in tables)).subquery()
        return sorted(row.namespace for row in self.database.fetch(select(found.c.namespace)))


def paused_names(
    database: Database, namespace: str | ColumnElement[str] | None = None
) -> Select[Any]:
    """The names of the paused queues of the database's namespace (or of ``namespace``: a
    job's own, read by id): read alone, or as the subquery of a claim and a look."""
    queues = database.schema.queues
    ours = database.mine(queues) if namespace is None else queues.c.namespace == namespace
    return select(queues.c.name).where(ours, queues.c.paused)
