"""Durable workflows: the steps a job saved (``ctx.step``, ``ctx.sleep``), the signals sent to
jobs (``rota.signal``, taken by ``ctx.wait_for``), the deadlines of waits with a timeout (in
their moment's order, so that finding one that passed is one seek), and on the job the signal
it waits for while ``waiting`` and ``has_workflow``, which lets the prune delete a job's steps
and signals with it without looking them up for every job it deletes.

Revision ID: 0016
Revises: 0015
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import context, op

from rota.core.names import LIMITS
from rota.store.schema import MYSQL_TABLE_OPTIONS, STEP_NAME_LENGTH
from rota.store.types import BigId, LongText, UtcDateTime

revision = "0016"
down_revision = "0015"
branch_labels = None
depends_on = None


def upgrade() -> None:
    prefix = context.config.attributes["table_prefix"]
    jobs = f"{prefix}jobs"
    op.add_column(
        jobs, sa.Column("has_workflow", sa.Boolean, nullable=False, server_default=sa.false())
    )
    op.add_column(jobs, sa.Column("waiting_for", sa.String(LIMITS["signal"]), nullable=True))
    op.create_table(
        f"{prefix}steps",
        sa.Column("id", BigId, primary_key=True, autoincrement=True),
        sa.Column("job_id", BigId, nullable=False),
        sa.Column("name", sa.String(STEP_NAME_LENGTH), nullable=False),
        sa.Column("result", LongText, nullable=True),
        sa.Column("finished_at", UtcDateTime, nullable=False),
        sa.Index(f"uq_{prefix}steps_name", "job_id", "name", unique=True),
        **MYSQL_TABLE_OPTIONS,
    )
    op.create_table(
        f"{prefix}signals",
        sa.Column("id", BigId, primary_key=True, autoincrement=True),
        sa.Column("job_id", BigId, nullable=False),
        sa.Column("name", sa.String(LIMITS["signal"]), nullable=False),
        sa.Column("payload", LongText, nullable=True),
        sa.Column("sent_at", UtcDateTime, nullable=False),
        sa.Column("taken_by", sa.String(STEP_NAME_LENGTH), nullable=True),
        sa.Index(f"ix_{prefix}signals_mailbox", "job_id", "name", "id"),
        **MYSQL_TABLE_OPTIONS,
    )
    op.create_table(
        f"{prefix}wait_deadlines",
        sa.Column("namespace", sa.String(LIMITS["namespace"]), primary_key=True),
        sa.Column("until", UtcDateTime, primary_key=True),
        sa.Column("job_id", BigId, primary_key=True, autoincrement=False),
        **MYSQL_TABLE_OPTIONS,
    )


def downgrade() -> None:
    prefix = context.config.attributes["table_prefix"]
    op.drop_table(f"{prefix}wait_deadlines")
    op.drop_table(f"{prefix}signals")
    op.drop_table(f"{prefix}steps")
    op.drop_column(f"{prefix}jobs", "waiting_for")
    op.drop_column(f"{prefix}jobs", "has_workflow")
