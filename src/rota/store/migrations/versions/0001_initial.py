"""Jobs, workers and schedules.

Revision ID: 0001
Revises:
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import context, op

from rota.store.schema import MYSQL_TABLE_OPTIONS
from rota.store.types import BigId, LongText, UtcDateTime

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    prefix = context.config.attributes["table_prefix"]
    op.create_table(
        f"{prefix}jobs",
        sa.Column("id", BigId, primary_key=True, autoincrement=True),
        sa.Column("task", sa.String(255), nullable=False),
        sa.Column("queue", sa.String(64), nullable=False),
        sa.Column("priority", sa.Integer, nullable=False),
        sa.Column("state", sa.String(16), nullable=False),
        sa.Column("payload", LongText, nullable=False),
        sa.Column("attempt", sa.Integer, nullable=False),
        sa.Column("max_attempts", sa.Integer, nullable=True),
        sa.Column("run_at", UtcDateTime, nullable=False),
        sa.Column("created_at", UtcDateTime, nullable=False),
        sa.Column("started_at", UtcDateTime, nullable=True),
        sa.Column("finished_at", UtcDateTime, nullable=True),
        sa.Column("lease_owner", sa.String(64), nullable=True),
        sa.Column("lease_until", UtcDateTime, nullable=True),
        sa.Column("cancel_requested", sa.Boolean, nullable=False, server_default=sa.false()),
        sa.Column("errors", LongText, nullable=True),
        sa.Column("schedule", sa.String(255), nullable=True),
        sa.Column("scheduled_at", UtcDateTime, nullable=True),
        **MYSQL_TABLE_OPTIONS,
    )
    op.create_index(
        f"ix_{prefix}jobs_claim", f"{prefix}jobs", ["state", "queue", "priority", "run_at"]
    )
    op.create_index(f"ix_{prefix}jobs_lease", f"{prefix}jobs", ["lease_until"])
    op.create_index(f"ix_{prefix}jobs_finished", f"{prefix}jobs", ["finished_at"])
    op.create_index(
        f"uq_{prefix}jobs_tick", f"{prefix}jobs", ["schedule", "scheduled_at"], unique=True
    )
    op.create_table(
        f"{prefix}workers",
        sa.Column("id", sa.String(64), primary_key=True),
        sa.Column("host", sa.String(255), nullable=False),
        sa.Column("pid", sa.Integer, nullable=False),
        sa.Column("queues", LongText, nullable=False),
        sa.Column("tasks", LongText, nullable=False),
        sa.Column("concurrency", sa.Integer, nullable=False),
        sa.Column("started_at", UtcDateTime, nullable=False),
        sa.Column("heartbeat_at", UtcDateTime, nullable=False),
        **MYSQL_TABLE_OPTIONS,
    )
    op.create_index(f"ix_{prefix}workers_heartbeat", f"{prefix}workers", ["heartbeat_at"])
    op.create_table(
        f"{prefix}schedules",
        sa.Column("id", BigId, primary_key=True, autoincrement=True),
        sa.Column("name", sa.String(255), nullable=False),
        sa.Column("task", sa.String(255), nullable=False),
        sa.Column("cron", sa.String(255), nullable=False),
        sa.Column("tz", sa.String(64), nullable=False),
        sa.Column("payload", LongText, nullable=False),
        sa.Column("queue", sa.String(64), nullable=False),
        sa.Column("priority", sa.Integer, nullable=False),
        sa.Column("source", sa.String(8), nullable=False),
        sa.Column("state", sa.String(16), nullable=False),
        sa.Column("next_run_at", UtcDateTime, nullable=False),
        sa.Column("last_run_at", UtcDateTime, nullable=True),
        sa.Column("created_at", UtcDateTime, nullable=False),
        sa.Column("updated_at", UtcDateTime, nullable=False),
        **MYSQL_TABLE_OPTIONS,
    )
    op.create_index(f"uq_{prefix}schedules_name", f"{prefix}schedules", ["name"], unique=True)
    op.create_index(f"ix_{prefix}schedules_due", f"{prefix}schedules", ["state", "next_run_at"])


def downgrade() -> None:
    prefix = context.config.attributes["table_prefix"]
    op.drop_table(f"{prefix}schedules")
    op.drop_table(f"{prefix}workers")
    op.drop_table(f"{prefix}jobs")
