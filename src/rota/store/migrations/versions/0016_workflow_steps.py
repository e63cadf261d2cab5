"""Durable workflow steps: the table a job's finished steps are saved in (``ctx.step``,
``ctx.sleep``), and the job's ``has_steps`` flag, which lets the prune delete a job's steps
with it without looking them up for every job it deletes.

Revision ID: 0016
Revises: 0015
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import context, op

from rota.store.schema import MYSQL_TABLE_OPTIONS, STEP_NAME_LENGTH
from rota.store.types import BigId, LongText, UtcDateTime

revision = "0016"
down_revision = "0015"
branch_labels = None
depends_on = None


def upgrade() -> None:
    prefix = context.config.attributes["table_prefix"]
    op.add_column(
        f"{prefix}jobs",
        sa.Column("has_steps", sa.Boolean, nullable=False, server_default=sa.false()),
    )
    op.create_table(
        f"{prefix}steps",
        sa.Column("job_id", BigId, primary_key=True, autoincrement=False),
        sa.Column("name", sa.String(STEP_NAME_LENGTH), primary_key=True),
        sa.Column("result", LongText, nullable=True),
        sa.Column("finished_at", UtcDateTime, nullable=False),
        **MYSQL_TABLE_OPTIONS,
    )


def downgrade() -> None:
    prefix = context.config.attributes["table_prefix"]
    op.drop_table(f"{prefix}steps")
    op.drop_column(f"{prefix}jobs", "has_steps")
