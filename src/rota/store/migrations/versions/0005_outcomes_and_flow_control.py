"""Handler outcomes and flow control: a job's result, progress and snoozes; the keys of its
concurrency and rate limits; the jobs it depends on; and one row per limit key, which claims
lock to count running jobs and keep a rate's token bucket.

Revision ID: 0005
Revises: 0004
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import context, op

from rota.store.schema import FLOW_KEY_LENGTH, MYSQL_TABLE_OPTIONS
from rota.store.types import BigId, LongText, UtcDateTime

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None

JOB_COLUMNS = (
    ("result", LongText, True, None),
    ("progress", sa.Float, True, None),
    ("progress_note", sa.String(255), True, None),
    ("snoozes", sa.Integer, False, sa.text("0")),
    ("concurrency_key", sa.String(FLOW_KEY_LENGTH), True, None),
    ("rate_key", sa.String(FLOW_KEY_LENGTH), True, None),
    ("has_dependencies", sa.Boolean, False, sa.false()),
)


def upgrade() -> None:
    prefix = context.config.attributes["table_prefix"]
    jobs = f"{prefix}jobs"
    for name, kind, nullable, default in JOB_COLUMNS:
        op.add_column(jobs, sa.Column(name, kind, nullable=nullable, server_default=default))
    op.create_index(f"ix_{prefix}jobs_concurrency", jobs, ["concurrency_key", "state"])
    op.create_table(
        f"{prefix}dependencies",
        sa.Column("job_id", BigId, primary_key=True, autoincrement=False),
        sa.Column("depends_on", BigId, primary_key=True, autoincrement=False),
        sa.Index(f"ix_{prefix}dependencies_depends_on", "depends_on"),
        **MYSQL_TABLE_OPTIONS,
    )
    op.create_table(
        f"{prefix}limits",
        sa.Column("key", sa.String(FLOW_KEY_LENGTH), primary_key=True),
        sa.Column("tokens", sa.Float, nullable=True),
        sa.Column("updated_at", UtcDateTime, nullable=True),
        **MYSQL_TABLE_OPTIONS,
    )


def downgrade() -> None:
    prefix = context.config.attributes["table_prefix"]
    jobs = f"{prefix}jobs"
    op.drop_table(f"{prefix}limits")
    op.drop_table(f"{prefix}dependencies")
    op.drop_index(f"ix_{prefix}jobs_concurrency", jobs)
    for name, *_ in reversed(JOB_COLUMNS):
        op.drop_column(jobs, name)
