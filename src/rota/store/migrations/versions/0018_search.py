"""Tags, search and bulk actions: a table of job tags, the record of bulk actions, and on each
job its metadata, last error code, unique-key period, replayed job and stuck attempt, with the
indexes ``rota.find`` filters by.

Revision ID: 0018
Revises: 0017
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import context, op

from rota.store.schema import (
    ERROR_CODE_LENGTH,
    MYSQL_TABLE_OPTIONS,
    bulk_action_columns,
    job_tag_columns,
)
from rota.store.types import BigId, LongText

revision = "0018"
down_revision = "0017"
branch_labels = None
depends_on = None

COLUMNS = (
    ("meta", LongText),
    ("error_code", sa.String(ERROR_CODE_LENGTH)),
    ("unique_for", sa.Integer),
    ("replay_of", BigId),
    ("stuck_attempt", sa.Integer),
)
INDEXES = {
    "task": ["namespace", "task", "id"],
    "created": ["namespace", "created_at"],
    "error": ["namespace", "error_code", "id"],
}


def upgrade() -> None:
    prefix = context.config.attributes["table_prefix"]
    jobs = f"{prefix}jobs"
    for name, kind in COLUMNS:
        op.add_column(jobs, sa.Column(name, kind, nullable=True))
    for name, columns in INDEXES.items():
        op.create_index(f"ix_{prefix}jobs_{name}", jobs, columns)
    op.create_table(f"{prefix}job_tags", *job_tag_columns(prefix), **MYSQL_TABLE_OPTIONS)
    op.create_table(f"{prefix}bulk_actions", *bulk_action_columns(), **MYSQL_TABLE_OPTIONS)


def downgrade() -> None:
    prefix = context.config.attributes["table_prefix"]
    jobs = f"{prefix}jobs"
    op.drop_table(f"{prefix}bulk_actions")
    op.drop_table(f"{prefix}job_tags")
    for name in INDEXES:
        op.drop_index(f"ix_{prefix}jobs_{name}", table_name=jobs)
    for name, _ in reversed(COLUMNS):
        op.drop_column(jobs, name)
