"""Unique keys on jobs; named leases for work only one process should do at a time.

Revision ID: 0002
Revises: 0001
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import context, op

from rota.store.schema import MYSQL_TABLE_OPTIONS
from rota.store.types import UtcDateTime

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    prefix = context.config.attributes["table_prefix"]
    op.add_column(f"{prefix}jobs", sa.Column("unique_key", sa.String(255), nullable=True))
    op.create_index(f"uq_{prefix}jobs_unique_key", f"{prefix}jobs", ["unique_key"], unique=True)
    op.create_table(
        f"{prefix}leases",
        sa.Column("name", sa.String(64), primary_key=True),
        sa.Column("owner", sa.String(64), nullable=False),
        sa.Column("until", UtcDateTime, nullable=False),
        **MYSQL_TABLE_OPTIONS,
    )


def downgrade() -> None:
    prefix = context.config.attributes["table_prefix"]
    op.drop_table(f"{prefix}leases")
    op.drop_index(f"uq_{prefix}jobs_unique_key", f"{prefix}jobs")
    op.drop_column(f"{prefix}jobs", "unique_key")
