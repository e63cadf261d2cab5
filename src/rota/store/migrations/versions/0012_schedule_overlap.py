"""Overlap policies: each schedule's ``overlap`` (``allow``, ``skip`` or ``queue``) and, while
a code schedule is overridden, the code's own (``code_overlap``); and dependency links that
wait for a job to end whatever its end (``until_final``), which hold a ``queue`` schedule's tick
until the previous run has ended.

Existing schedules get ``skip``, the default, although they behaved as ``allow`` before: the
upgrade notes of the docs say so.  An overridden schedule's ``code_overlap`` is ``skip`` too,
what its code (which could not name a policy yet) now means.  Going down, the policies are lost
and the waiting links are deleted (an older claim would read them as dependencies that must
succeed), so the ticks that waited may start at once.

Revision ID: 0012
Revises: 0011
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import context, op

revision = "0012"
down_revision = "0011"
branch_labels = None
depends_on = None


def upgrade() -> None:
    prefix = context.config.attributes["table_prefix"]
    schedules = f"{prefix}schedules"
    op.add_column(
        schedules,
        sa.Column("overlap", sa.String(8), nullable=False, server_default=sa.text("'skip'")),
    )
    op.add_column(schedules, sa.Column("code_overlap", sa.String(8), nullable=True))
    quoted = op.get_context().dialect.identifier_preparer.quote(schedules)
    op.execute(f"UPDATE {quoted} SET code_overlap = 'skip' WHERE code_cron IS NOT NULL")
    op.add_column(
        f"{prefix}dependencies",
        sa.Column("until_final", sa.Boolean, nullable=False, server_default=sa.false()),
    )


def downgrade() -> None:
    prefix = context.config.attributes["table_prefix"]
    links = op.get_context().dialect.identifier_preparer.quote(f"{prefix}dependencies")
    op.execute(f"DELETE FROM {links} WHERE until_final = TRUE")
    op.drop_column(f"{prefix}dependencies", "until_final")
    op.drop_column(f"{prefix}schedules", "code_overlap")
    op.drop_column(f"{prefix}schedules", "overlap")
