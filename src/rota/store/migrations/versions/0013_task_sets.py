"""The task sets workers claim for: a claim names its worker's tasks by the key of their set,
its rows written once, instead of sending every name with every claim and idle look (10,000
registered tasks made each claim 25 times slower).

Revision ID: 0013
Revises: 0012
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import context, op

from rota.core.names import LIMITS
from rota.store.schema import MYSQL_TABLE_OPTIONS, TASK_SET_KEY_LENGTH

revision = "0013"
down_revision = "0012"
branch_labels = None
depends_on = None


def upgrade() -> None:
    prefix = context.config.attributes["table_prefix"]
    op.create_table(
        f"{prefix}task_sets",
        sa.Column("set_key", sa.String(TASK_SET_KEY_LENGTH), primary_key=True),
        sa.Column("task", sa.String(LIMITS["task"]), primary_key=True),
        **MYSQL_TABLE_OPTIONS,
    )


def downgrade() -> None:
    prefix = context.config.attributes["table_prefix"]
    op.drop_table(f"{prefix}task_sets")
