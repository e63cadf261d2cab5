"""Each worker row records its heartbeat interval, so that it is taken for dead after two
missed heartbeats of its own instead of after a window fixed for every worker.

Revision ID: 0004
Revises: 0003
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import context, op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None


def upgrade() -> None:
    prefix = context.config.attributes["table_prefix"]
    op.add_column(f"{prefix}workers", sa.Column("heartbeat_seconds", sa.Float, nullable=True))


def downgrade() -> None:
    prefix = context.config.attributes["table_prefix"]
    op.drop_column(f"{prefix}workers", "heartbeat_seconds")
