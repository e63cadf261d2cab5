"""Schedules at runtime: the code's rule kept beside an override, a version for compare-and-set
edits, the failing-ticks count behind ``alert_after_failures``, and each schedule's history.

Revision ID: 0006
Revises: 0005
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import context, op

from rota.core import cron
from rota.core.names import LIMITS
from rota.store.schema import ACTOR_LENGTH, MYSQL_TABLE_OPTIONS
from rota.store.types import BigId, LongText, UtcDateTime

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None

SCHEDULE_COLUMNS = (
    ("code_cron", sa.String(cron.MAX_LENGTH), True, None),
    ("code_tz", sa.String(cron.MAX_ZONE_LENGTH), True, None),
    ("version", sa.Integer, False, sa.text("0")),
    ("failures", sa.Integer, False, sa.text("0")),
    ("failing", sa.Boolean, False, sa.false()),
)


def upgrade() -> None:
    prefix = context.config.attributes["table_prefix"]
    for name, kind, nullable, default in SCHEDULE_COLUMNS:
        op.add_column(
            f"{prefix}schedules",
            sa.Column(name, kind, nullable=nullable, server_default=default),
        )
    op.create_table(
        f"{prefix}schedule_history",
        sa.Column("id", BigId, primary_key=True, autoincrement=True),
        sa.Column("schedule", sa.String(LIMITS["schedule"]), nullable=False),
        sa.Column("at", UtcDateTime, nullable=False),
        sa.Column("action", sa.String(32), nullable=False),
        sa.Column("actor", sa.String(ACTOR_LENGTH), nullable=False),
        sa.Column("old", LongText, nullable=True),
        sa.Column("new", LongText, nullable=True),
        sa.Index(f"ix_{prefix}schedule_history_schedule", "schedule", "id"),
        sa.Index(f"ix_{prefix}schedule_history_at", "at"),
        **MYSQL_TABLE_OPTIONS,
    )


def downgrade() -> None:
    prefix = context.config.attributes["table_prefix"]
    op.drop_table(f"{prefix}schedule_history")
    for name, *_ in reversed(SCHEDULE_COLUMNS):
        op.drop_column(f"{prefix}schedules", name)
