"""Batches: a row per ``rota.batch`` (its size and its two callback jobs), and on each job the
batch it belongs to, indexed so that ``rota.batch_status`` counts a batch's jobs by state.

Revision ID: 0017
Revises: 0016
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import context, op

from rota.store.schema import MYSQL_TABLE_OPTIONS, namespace_column
from rota.store.types import BigId, UtcDateTime

revision = "0017"
down_revision = "0016"
branch_labels = None
depends_on = None


def upgrade() -> None:
    prefix = context.config.attributes["table_prefix"]
    jobs = f"{prefix}jobs"
    op.add_column(jobs, sa.Column("batch_id", BigId, nullable=True))
    op.create_index(f"ix_{prefix}jobs_batch", jobs, ["batch_id"])
    op.create_table(
        f"{prefix}batches",
        sa.Column("id", BigId, primary_key=True, autoincrement=True),
        namespace_column(),
        sa.Column("created_at", UtcDateTime, nullable=False),
        sa.Column("size", sa.Integer, nullable=False),
        sa.Column("on_success", BigId, nullable=True),
        sa.Column("on_complete", BigId, nullable=True),
        **MYSQL_TABLE_OPTIONS,
    )


def downgrade() -> None:
    prefix = context.config.attributes["table_prefix"]
    op.drop_table(f"{prefix}batches")
    op.drop_index(f"ix_{prefix}jobs_batch", table_name=f"{prefix}jobs")
    op.drop_column(f"{prefix}jobs", "batch_id")
