"""Apply rota's Alembic migrations to a live database, or print their DDL for a DBA."""

from __future__ import annotations

import contextlib
import io
import threading
from collections.abc import Iterator
from pathlib import Path

from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import text
from sqlalchemy.engine import URL, Connection, Engine

from rota.store.dialects import Dialect, normalise_url

MIGRATIONS = Path(__file__).parent / "migrations"
LOCK_NAME = "rota_migrate"
_IN_PROCESS = threading.Lock()


def _config(prefix: str) -> Config:
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    config.attributes["table_prefix"] = prefix
    return config


def head_revision() -> str:
    head = ScriptDirectory.from_config(_config("rota_")).get_current_head()
    assert head is not None
    return head


def current_revision(engine: Engine, prefix: str) -> str | None:
    with engine.connect() as connection:
        context = MigrationContext.configure(
            connection, opts={"version_table": f"{prefix}alembic_version"}
        )
        return context.get_current_revision()


def upgrade(engine: Engine, dialect: Dialect, prefix: str) -> None:
    """Bring the schema to the newest revision; safe when several processes start together.

    Alembic keeps its running context in a module global, so threads of one process take turns.
    """
    with _IN_PROCESS, engine.connect() as connection, _migration_lock(connection, dialect):
        config = _config(prefix)
        config.attributes["connection"] = connection
        command.upgrade(config, "head")
        connection.commit()


def upgrade_sql(url: str | URL, prefix: str) -> str:
    """The DDL that ``upgrade`` would run on an empty database of this URL's kind."""
    buffer = io.StringIO()
    config = _config(prefix)
    config.output_buffer = buffer
    config.attributes["url"] = normalise_url(url).set(password=None)
    command.upgrade(config, "head", sql=True)
    return buffer.getvalue()


@contextlib.contextmanager
def _migration_lock(connection: Connection, dialect: Dialect) -> Iterator[None]:
    if dialect.name == "postgresql":
        connection.execute(text("SELECT pg_advisory_lock(hashtext(:name))"), {"name": LOCK_NAME})
        try:
            yield
        finally:
            connection.execute(
                text("SELECT pg_advisory_unlock(hashtext(:name))"), {"name": LOCK_NAME}
            )
            connection.commit()
    elif dialect.name == "mysql":
        connection.execute(text("SELECT GET_LOCK(:name, 120)"), {"name": LOCK_NAME})
        try:
            yield
        finally:
            connection.execute(text("SELECT RELEASE_LOCK(:name)"), {"name": LOCK_NAME})
            connection.commit()
    else:
        yield
