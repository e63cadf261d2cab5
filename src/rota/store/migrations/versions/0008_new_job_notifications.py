"""New jobs announced as they commit (PostgreSQL): a statement trigger on the jobs table sends
``NOTIFY`` on the table's channel, so a listening worker starts a job queued by another process
at once instead of at its next poll, with no extra statement per enqueue (the trigger runs in
the inserting transaction, and PostgreSQL delivers the notification at its commit). Other
backends have no such channel and keep polling.

Revision ID: 0008
Revises: 0007
"""

from __future__ import annotations

from alembic import context, op

from rota.store.schema import jobs_channel, notify_function

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None


def names() -> tuple[str, str, str]:
    """The table and the function quoted as SQLAlchemy quotes them (a prefix with capitals keeps
    its case, which PostgreSQL would otherwise fold), and the channel, a string."""
    prefix = context.config.attributes["table_prefix"]
    quote = op.get_context().dialect.identifier_preparer.quote
    return quote(f"{prefix}jobs"), quote(notify_function(prefix)), jobs_channel(prefix)


def upgrade() -> None:
    if op.get_bind().dialect.name != "postgresql":
        return
    table, function, channel = names()
    op.execute(
        f"CREATE OR REPLACE FUNCTION {function}() RETURNS trigger LANGUAGE plpgsql AS "
        f"$$ BEGIN PERFORM pg_notify('{channel}', ''); RETURN NULL; END $$"
    )
    op.execute(
        f"CREATE TRIGGER {function} AFTER INSERT ON {table} "
        f"FOR EACH STATEMENT EXECUTE PROCEDURE {function}()"
    )


def downgrade() -> None:
    if op.get_bind().dialect.name != "postgresql":
        return
    table, function, _ = names()
    op.execute(f"DROP TRIGGER IF EXISTS {function} ON {table}")
    op.execute(f"DROP FUNCTION IF EXISTS {function}()")
