"""Exact counts of finished jobs without reading the history: ``tallies`` holds how many
finished jobs there are per state, queue and task up to ``tally_mark.folded_until``; the jobs
that finished later are counted from the finished-jobs index.

Revision ID: 0009
Revises: 0008
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import context, op

from rota.core.names import LIMITS
from rota.store.schema import MYSQL_TABLE_OPTIONS
from rota.store.types import UtcDateTime

revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None


def upgrade() -> None:
    prefix = context.config.attributes["table_prefix"]
    op.create_table(
        f"{prefix}tallies",
        sa.Column("state", sa.String(16), primary_key=True),
        sa.Column("queue", sa.String(LIMITS["queue"]), primary_key=True),
        sa.Column("task", sa.String(LIMITS["task"]), primary_key=True),
        sa.Column("jobs", sa.BigInteger, nullable=False),
        **MYSQL_TABLE_OPTIONS,
    )
    op.create_table(
        f"{prefix}tally_mark",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=False),
        sa.Column("folded_until", UtcDateTime, nullable=False),
        **MYSQL_TABLE_OPTIONS,
    )
    # Nothing folded yet: the first fold starts from the oldest finished job.
    mark = op.get_context().dialect.identifier_preparer.quote(f"{prefix}tally_mark")
    op.execute(f"INSERT INTO {mark} (id, folded_until) VALUES (1, '1970-01-01 00:00:00.000000')")


def downgrade() -> None:
    prefix = context.config.attributes["table_prefix"]
    op.drop_table(f"{prefix}tally_mark")
    op.drop_table(f"{prefix}tallies")
