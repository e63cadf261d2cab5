"""Apply rota's Alembic migrations to a live database, or print their DDL for a DBA; tell a
schema that is missing or behind from one this release can use."""

from __future__ import annotations

import io
import logging
import threading
from pathlib import Path

from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from alembic.util import CommandError
from sqlalchemy import MetaData, Table
from sqlalchemy.engine import URL, Connection

from rota.core.connection import DEFAULT_TABLE_PREFIX
from rota.core.events import EventName
from rota.errors import StoreError
from rota.store.base import MIGRATION_LOCK_TIMEOUT
from rota.store.database import Database
from rota.store.schema import notify_function
from rota.store.urls import normalise_url
from rota.store.values import SchemaStatus

MIGRATIONS = Path(__file__).parent / "migrations"
_IN_PROCESS = threading.Lock()
logger = logging.getLogger("rota")


def quiet_alembic() -> None:
    """Alembic logs a few lines at INFO each time it looks at a database (its implementation,
    the DDL mode, each revision run): noise in a service's log.  Its logger goes to WARNING
    unless rota's logs at DEBUG, or the application set Alembic's level itself."""
    alembic = logging.getLogger("alembic")
    if alembic.level == logging.NOTSET and not logger.isEnabledFor(logging.DEBUG):
        alembic.setLevel(logging.WARNING)


def _config(prefix: str) -> Config:
    quiet_alembic()
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    config.attributes["table_prefix"] = prefix
    return config


def _scripts() -> ScriptDirectory:
    return ScriptDirectory.from_config(_config(DEFAULT_TABLE_PREFIX))


def head_revision() -> str:
    head = _scripts().get_current_head()
    assert head is not None
    return head


def known_revisions() -> set[str]:
    return {script.revision for script in _scripts().walk_revisions()}


def current_revision(database: Database) -> str | None:
    with database.translate_errors(), database.engine.connect() as connection:
        return _revision(connection, database.table_prefix)


def _version_table(prefix: str) -> str:
    return f"{prefix}alembic_version"


def _revision(connection: Connection, prefix: str) -> str | None:
    quiet_alembic()
    context = MigrationContext.configure(connection, opts={"version_table": _version_table(prefix)})
    return context.get_current_revision()


def schema_state(current: str | None, head: str) -> str:
    """``missing``, ``up to date``, ``behind``, or ``newer`` (written by a newer release)."""
    if current is None:
        return "missing"
    if current == head:
        return "up to date"
    return "behind" if current in known_revisions() else "newer"


def schema_problem(current: str | None, head: str, prefix: str, where: str) -> str | None:
    """Why the tables cannot serve this release, naming the fix; ``None`` when they can."""
    state = schema_state(current, head)
    if state == "missing":
        return f"no rota schema with table prefix {prefix!r} in the {where}: run `rota migrate`"
    if state == "behind":
        return (
            f"the schema in the {where} is at revision {current}, this rota needs {head}: "
            "run `rota migrate`"
        )
    return None


def schema_status(database: Database) -> SchemaStatus:
    current, head = current_revision(database), head_revision()
    problem = schema_problem(current, head, database.table_prefix, database.where)
    return SchemaStatus(current, head, schema_state(current, head), problem)


def upgrade(database: Database, lock_timeout: float = MIGRATION_LOCK_TIMEOUT) -> list[str]:
    """Bring the schema to the newest revision; safe when several processes start together.
    Return the revisions this call applied, oldest first: none if it was up to date already,
    or newer than this release (a rolling deploy's old processes must still start).

    Alembic keeps its running context in a module global, so threads of one process take turns.
    """
    with (
        _IN_PROCESS,
        database.translate_errors(),
        database.engine.connect() as connection,
        database.dialect.migration_lock(connection, database.table_prefix, lock_timeout),
    ):
        before = _revision(connection, database.table_prefix)
        head = head_revision()
        if schema_state(before, head) == "newer":
            database.events(
                logger,
                EventName.SCHEMA_NEWER,
                logging.WARNING,
                "the schema is at revision %s, written by a newer rota than this one (which "
                "knows up to %s); leaving it as it is",
                before,
                head,
            )
            return []
        config = _config(database.table_prefix)
        config.attributes["connection"] = connection
        try:
            command.upgrade(config, "head")
        except CommandError as error:  # the revisions changed under it (a lock not shared)
            raise StoreError(f"the schema migration failed: {error}") from error
        connection.commit()
    lower = "base" if before is None else before
    return [script.revision for script in reversed(list(_scripts().iterate_revisions(head, lower)))]


def upgrade_sql(url: str | URL, prefix: str) -> str:
    """The DDL that ``upgrade`` would run on an empty database of this URL's kind."""
    buffer = io.StringIO()
    config = _config(prefix)
    config.output_buffer = buffer
    config.attributes["url"] = normalise_url(url).set(password=None)
    command.upgrade(config, "head", sql=True)
    return buffer.getvalue()


def drop(database: Database) -> None:
    """Drop the prefix's tables, its migration record and PostgreSQL's trigger function, each
    if it exists: what ``upgrade`` made, named as the schema and migration 0008 name them
    rather than by matching names, so another prefix's or application's tables stay."""
    version = Table(_version_table(database.table_prefix), MetaData())
    quote = database.engine.dialect.identifier_preparer.quote
    function = quote(notify_function(database.table_prefix))

    def drop_all(connection: Connection) -> None:
        database.schema.metadata.drop_all(connection)
        version.drop(connection, checkfirst=True)
        if database.dialect.announces_new_jobs:
            connection.exec_driver_sql(f"DROP FUNCTION IF EXISTS {function}()")

    database.transaction(drop_all)
