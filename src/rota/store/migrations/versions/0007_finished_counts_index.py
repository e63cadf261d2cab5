"""Finished jobs counted from an index: ``ix_jobs_finished`` gains the state, queue and task.

``Rota.counts()`` and the dashboard's chart count the jobs finished in the last day grouped by
state, queue and task; with those columns in the index they are counted without reading a row.

Revision ID: 0007
Revises: 0006
"""

from __future__ import annotations

from alembic import context, op

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None

FINISHED_INDEX = ("finished_at", "state", "queue", "task")
"""The index as this revision makes it (0011 adds the namespace)."""


def replace_index(columns: tuple[str, ...]) -> None:
    prefix = context.config.attributes["table_prefix"]
    name, table = f"ix_{prefix}jobs_finished", f"{prefix}jobs"
    op.drop_index(name, table_name=table)
    op.create_index(name, table, list(columns))


def upgrade() -> None:
    replace_index(FINISHED_INDEX)


def downgrade() -> None:
    replace_index(("finished_at",))
