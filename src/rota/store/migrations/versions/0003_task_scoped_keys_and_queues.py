"""Unique keys scoped per task; a table of queue states (paused queues are never claimed from).

Revision ID: 0003
Revises: 0002
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import context, op

from rota.store.schema import MYSQL_TABLE_OPTIONS
from rota.store.types import UtcDateTime

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    prefix = context.config.attributes["table_prefix"]
    jobs = f"{prefix}jobs"
    op.drop_index(f"uq_{prefix}jobs_unique_key", jobs)
    op.create_index(f"uq_{prefix}jobs_unique_key", jobs, ["task", "unique_key"], unique=True)
    op.create_table(
        f"{prefix}queues",
        sa.Column("name", sa.String(64), primary_key=True),
        sa.Column("paused", sa.Boolean, nullable=False, server_default=sa.false()),
        sa.Column("updated_at", UtcDateTime, nullable=False),
        **MYSQL_TABLE_OPTIONS,
    )


def downgrade() -> None:
    prefix = context.config.attributes["table_prefix"]
    jobs = f"{prefix}jobs"
    op.drop_table(f"{prefix}queues")
    op.drop_index(f"uq_{prefix}jobs_unique_key", jobs)
    op.create_index(f"uq_{prefix}jobs_unique_key", jobs, ["unique_key"], unique=True)
