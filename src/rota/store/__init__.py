"""Storage, behind the ``Store`` protocol: the only package that imports SQLAlchemy or Alembic.

::

    base.py        the Store and ScheduleStore protocols
    values.py      the values they return besides rota's model (server, schema, outlook)
    sql.py         SqlStore: the protocol over one database; open_store(url, prefix)
    borrowed.py    a Connection over a DB-API connection lent by its owner (Django)
    database.py    the shared Database: engine, dialect, tables, retried transactions
    jobs.py        a job's life: enqueue, claim, finish, leases, rescue, cancel, retry, prune
    reads.py       inspection: one job, lists, exact counts, pending by task and queue
    cluster.py     workers, named leases, paused queues
    outlook.py     an idle worker's one look a poll: a job due, a lease expired, the next tick
    schedules.py   schedules by name, and firing each tick exactly once
    rows.py        rows to value types and back
    migrate.py     Alembic migrations: apply, print, the schema's status; drop a prefix's tables
    urls.py        database URLs: parse, add the driver, describe and mask
    dialects/      one class per backend: every MySQL/MariaDB, PostgreSQL, SQLite difference
    schema.py      the tables; types.py their portable column types
"""

from __future__ import annotations

from rota.store.base import CallerConnection, ScheduleStore, Store
from rota.store.migrate import head_revision, upgrade_sql
from rota.store.sql import SqlStore, open_store
from rota.store.values import Outlook, SchemaStatus, ServerInfo

__all__ = [
    "CallerConnection",
    "Outlook",
    "ScheduleStore",
    "SchemaStatus",
    "ServerInfo",
    "SqlStore",
    "Store",
    "head_revision",
    "open_store",
    "upgrade_sql",
]
