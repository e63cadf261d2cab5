"""Manual runs have a tick: ``jobs.tick`` tells a cron tick's job (TRUE) from a manual run
(NULL), which now records the moment it was asked for as its ``scheduled_at``; the tick's unique
key gains the column, so a manual run never meets a tick of the same moment (``TICK_KEY``).

Manual runs made before this revision keep no ``scheduled_at``; going down, the manual runs made
since lose theirs again, as the older key cannot hold them.

Revision ID: 0010
Revises: 0009
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import context, op

revision = "0010"
down_revision = "0009"
branch_labels = None
depends_on = None

TICK_KEY = ("schedule", "scheduled_at", "tick")
"""The key as this revision makes it (0011 adds the namespace)."""


def names() -> tuple[str, str, str]:
    """The jobs table's name, quoted for SQL text, and the tick index's."""
    prefix = context.config.attributes["table_prefix"]
    quoted = op.get_context().dialect.identifier_preparer.quote(f"{prefix}jobs")
    return f"{prefix}jobs", quoted, f"uq_{prefix}jobs_tick"


def upgrade() -> None:
    jobs, quoted, index = names()
    op.add_column(jobs, sa.Column("tick", sa.Boolean, nullable=True))
    op.execute(
        f"UPDATE {quoted} SET tick = TRUE WHERE schedule IS NOT NULL AND scheduled_at IS NOT NULL"
    )
    op.drop_index(index, table_name=jobs)
    op.create_index(index, jobs, list(TICK_KEY), unique=True)


def downgrade() -> None:
    jobs, quoted, index = names()
    op.execute(
        f"UPDATE {quoted} SET scheduled_at = NULL WHERE schedule IS NOT NULL AND tick IS NULL"
    )
    op.drop_index(index, table_name=jobs)
    op.create_index(index, jobs, ["schedule", "scheduled_at"], unique=True)
    op.drop_column(jobs, "tick")
