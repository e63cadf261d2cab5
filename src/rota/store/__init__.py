"""Storage, behind the ``Store`` protocol: the only package that imports SQLAlchemy or Alembic.

::

    base/            the Store protocol and its sub-stores' (jobs, finished, reads, cluster,
                     schedules), one module each
    values.py        the values they return besides rota's model (server, schema, outlook)
    sql.py           SqlStore: the protocol over one database; open_store(url, prefix)
    database.py      the shared Database: engine, dialect, tables, retried transactions
    borrowed.py      a Connection over a DB-API connection lent by its owner (Django)
    jobs.py          a job's life: enqueue, claim, finish, lease renewal, rescue, cancel
    dependencies.py  depends_on: linked at enqueue, waited for by the claim, cascaded
    limits.py        the claim of jobs under a concurrency or rate limit
    finished.py      finished jobs: retried, pruned, counted
    reads.py         inspection: one job, lists, exact counts, pending by task and queue
    unreadable.py    the rows this rota cannot read (rota check)
    cluster.py       workers, named leases, paused queues
    outlook.py       an idle worker's one look a poll: a job due, a lease expired, the next tick
    signals.py       new jobs heard as they commit (PostgreSQL's LISTEN)
    schedules.py     schedules by name, and firing each tick exactly once
    history.py       each schedule change's history row, in the change's transaction
    rows.py          rows to value types and back (worker_rows.py: a worker's row)
    sizes.py         results grouped into statements the server takes
    events.py        what the store meets, announced without importing the event log
    secrets.py       every form of a secret, hidden from messages
    urls.py          database URLs as SQLAlchemy takes them: parse, add the driver, secrets
    migrate.py       Alembic migrations: apply, print, the schema's status; drop a prefix's tables
    migrations/      the Alembic environment and its versions
    dialects/        one class per backend: every MySQL/MariaDB, PostgreSQL, SQLite difference
    schema.py        the tables; types.py their portable column types
"""

from __future__ import annotations

from rota.store.base import CallerConnection, ScheduleStore, Store
from rota.store.migrate import head_revision, upgrade_sql
from rota.store.sql import SqlStore, open_store
from rota.store.values import Loan, Outlook, SchemaStatus, ServerInfo

__all__ = [
    "CallerConnection",
    "Loan",
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
