"""Storage, behind the ``Store`` protocol: the only package that imports SQLAlchemy or Alembic.

::

    base.py        the Store and ScheduleStore protocols, and the values they return
    sql.py         SqlStore: the protocol over one database; open_store(url, prefix)
    borrowed.py    a Connection over a DB-API connection lent by its owner (Django)
    database.py    the shared Database: engine, dialect, tables, retried transactions
    jobs.py        a job's life: enqueue, claim, finish, leases, rescue, cancel, retry, prune
    reads.py       inspection: one job, lists, exact counts, pending by task and queue
    cluster.py     workers, named leases, paused queues
    schedules.py   schedules by name, and firing each tick exactly once
    rows.py        rows to value types and back
    migrate.py     Alembic migrations: apply, print, and the schema's status
    urls.py        database URLs: parse, add the driver, describe and mask
    dialects/      one class per backend: every MySQL/MariaDB, PostgreSQL, SQLite difference
    schema.py      the tables; types.py their portable column types
"""

from __future__ import annotations

from rota.store.base import CallerConnection, ScheduleStore, SchemaStatus, ServerInfo, Store
from rota.store.migrate import head_revision, upgrade_sql
from rota.store.sql import SqlStore, open_store

__all__ = [
    "CallerConnection",
    "ScheduleStore",
    "SchemaStatus",
    "ServerInfo",
    "SqlStore",
    "Store",
    "head_revision",
    "open_store",
    "upgrade_sql",
]
