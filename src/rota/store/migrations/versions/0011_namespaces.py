"""Namespaces: several services on one database. Jobs, schedules, their history, workers,
named leases, paused queues, flow-limit keys and tallies carry the namespace they belong to;
every row written before is in the default one. The keys that named a row (a schedule's name,
a tick, a unique key, a queue, a lease, a limit key, a tally) now name it within its namespace,
and the claim, due-schedule and finished-job indexes lead with or hold it. Workers also record
a fingerprint of each task they define, so that two live workers of one namespace that define a
task differently are reported.

The small tables whose primary key gains the column (leases, queues, limits, tallies) are
rebuilt with their rows; the large ones gain a column with a default (an instant change on
MySQL 8 and PostgreSQL 11+) and rebuilt indexes.  Going down is refused while a row of another
namespace exists: the older keys cannot tell two services' rows apart.

Revision ID: 0011
Revises: 0010
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import sqlalchemy as sa
from alembic import context, op

from rota.core.connection import DEFAULT_NAMESPACE
from rota.core.names import LIMITS
from rota.errors import StoreError
from rota.store.schema import MYSQL_TABLE_OPTIONS
from rota.store.types import LongText, UtcDateTime

revision = "0011"
down_revision = "0010"
branch_labels = None
depends_on = None

NAMESPACE_LENGTH = LIMITS["namespace"]
NAMESPACED = ("jobs", "schedules", "schedule_history", "workers")
"""The tables that gain a namespace column beside their own key."""
OLD_INDEXES = {
    "jobs": {
        "ix_jobs_claim": ["state", "queue", "priority", "run_at"],
        "ix_jobs_finished": ["finished_at", "state", "queue", "task"],
        "uq_jobs_tick": ["schedule", "scheduled_at", "tick"],
        "uq_jobs_unique_key": ["task", "unique_key"],
    },
    "schedules": {
        "uq_schedules_name": ["name"],
        "ix_schedules_due": ["state", "next_run_at"],
    },
    "schedule_history": {"ix_schedule_history_schedule": ["schedule", "id"]},
}
NEW_INDEXES = {
    "jobs": {
        "ix_jobs_claim": ["namespace", "state", "queue", "priority", "run_at"],
        "ix_jobs_finished": ["finished_at", "namespace", "state", "queue", "task"],
        "uq_jobs_tick": ["namespace", "schedule", "scheduled_at", "tick"],
        "uq_jobs_unique_key": ["namespace", "task", "unique_key"],
    },
    "schedules": {
        "uq_schedules_name": ["namespace", "name"],
        "ix_schedules_due": ["namespace", "state", "next_run_at"],
    },
    "schedule_history": {"ix_schedule_history_schedule": ["namespace", "schedule", "id"]},
}


def keyed_tables(namespaced: bool) -> dict[str, list[sa.Column[Any]]]:
    """The columns of the tables whose primary key gains the namespace, with or without it."""
    first = (
        [sa.Column("namespace", sa.String(NAMESPACE_LENGTH), primary_key=True)]
        if namespaced
        else []
    )
    return {
        "leases": [
            *first,
            sa.Column("name", sa.String(64), primary_key=True),
            sa.Column("owner", sa.String(64), nullable=False),
            sa.Column("until", UtcDateTime, nullable=False),
        ],
        "queues": [
            *first,
            sa.Column("name", sa.String(LIMITS["queue"]), primary_key=True),
            sa.Column("paused", sa.Boolean, nullable=False, server_default=sa.false()),
            sa.Column("updated_at", UtcDateTime, nullable=False),
        ],
        "limits": [
            *first,
            sa.Column("key", sa.String(255), primary_key=True),
            sa.Column("tokens", sa.Float, nullable=True),
            sa.Column("updated_at", UtcDateTime, nullable=True),
        ],
        "tallies": [
            *first,
            sa.Column("state", sa.String(16), primary_key=True),
            sa.Column("queue", sa.String(LIMITS["queue"]), primary_key=True),
            sa.Column("task", sa.String(LIMITS["task"]), primary_key=True),
            sa.Column("jobs", sa.BigInteger, nullable=False),
        ],
    }


def rebuild(prefix: str, name: str, columns: Sequence[sa.Column[Any]], up: bool) -> None:
    """Rebuild the table ``name`` as ``columns`` with its rows: going up each in the default
    namespace, going down only the default namespace's.  Plain SQL (a copy, then a rename), so
    that ``rota migrate --sql`` prints it too."""
    dialect = op.get_context().dialect
    quote = dialect.identifier_preparer.quote
    table, building = f"{prefix}{name}", f"{prefix}{name}_rebuilt"
    op.create_table(building, *columns, **MYSQL_TABLE_OPTIONS)
    names = [column.name for column in columns]
    target = ", ".join(quote(column) for column in names)
    default = f"'{DEFAULT_NAMESPACE}'"
    source = ", ".join(default if column == "namespace" else quote(column) for column in names)
    only = "" if up else f" WHERE namespace = {default}"
    op.execute(
        f"INSERT INTO {quote(building)} ({target}) SELECT {source} FROM {quote(table)}{only}"
    )
    op.drop_table(table)
    op.rename_table(building, table)
    if dialect.name == "postgresql":
        old, new = quote(f"{building}_pkey"), quote(f"{table}_pkey")
        op.execute(f"ALTER TABLE {quote(table)} RENAME CONSTRAINT {old} TO {new}")


def index_name(prefix: str, index: str) -> str:
    """``ix_jobs_claim`` as the index of the tables named by ``prefix``."""
    return f"{index[:3]}{prefix}{index[3:]}"


def drop_indexes(prefix: str, indexes: dict[str, dict[str, list[str]]]) -> None:
    for table, named in indexes.items():
        for index in named:
            op.drop_index(index_name(prefix, index), table_name=f"{prefix}{table}")


def create_indexes(prefix: str, indexes: dict[str, dict[str, list[str]]]) -> None:
    for table, named in indexes.items():
        for index, columns in named.items():
            unique = index.startswith("uq_")
            op.create_index(index_name(prefix, index), f"{prefix}{table}", columns, unique=unique)


def namespace_column() -> sa.Column[str]:
    return sa.Column(
        "namespace",
        sa.String(NAMESPACE_LENGTH),
        nullable=False,
        server_default=DEFAULT_NAMESPACE,
    )


def upgrade() -> None:
    prefix = context.config.attributes["table_prefix"]
    drop_indexes(prefix, OLD_INDEXES)
    for table in NAMESPACED:
        op.add_column(f"{prefix}{table}", namespace_column())
    op.add_column(f"{prefix}workers", sa.Column("definitions", LongText, nullable=True))
    create_indexes(prefix, NEW_INDEXES)
    for name, columns in keyed_tables(namespaced=True).items():
        rebuild(prefix, name, columns, up=True)


def downgrade() -> None:
    prefix = context.config.attributes["table_prefix"]
    connection = op.get_bind()
    for table in NAMESPACED:
        quoted = connection.dialect.identifier_preparer.quote(f"{prefix}{table}")
        others = connection.execute(
            sa.text(f"SELECT COUNT(*) FROM {quoted} WHERE namespace <> :default"),
            {"default": DEFAULT_NAMESPACE},
        ).scalar_one()
        if others:
            raise StoreError(
                f"{prefix}{table} holds rows of namespaces other than {DEFAULT_NAMESPACE!r}: "
                "a schema below revision 0011 cannot tell them apart"
            )
    for name, columns in keyed_tables(namespaced=False).items():
        rebuild(prefix, name, columns, up=False)
    drop_indexes(prefix, NEW_INDEXES)
    op.drop_column(f"{prefix}workers", "definitions")
    for table in NAMESPACED:
        op.drop_column(f"{prefix}{table}", "namespace")
    create_indexes(prefix, OLD_INDEXES)
