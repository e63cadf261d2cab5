"""Alembic environment: rota passes the connection (or, offline, the URL) and the table prefix."""

from __future__ import annotations

from alembic import context

from rota.core.connection import DEFAULT_TABLE_PREFIX

config = context.config
prefix = config.attributes.setdefault("table_prefix", DEFAULT_TABLE_PREFIX)
version_table = f"{prefix}alembic_version"

if context.is_offline_mode():
    context.configure(
        url=config.attributes["url"],
        literal_binds=True,
        version_table=version_table,
        dialect_opts={"paramstyle": "named"},
    )
else:
    context.configure(connection=config.attributes["connection"], version_table=version_table)

with context.begin_transaction():
    context.run_migrations()
