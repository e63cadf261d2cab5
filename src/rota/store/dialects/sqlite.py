"""SQLite: one writer at a time, a file shared by threads, busy errors, no server clock."""

from __future__ import annotations

from typing import Any

from sqlalchemy import Select, Table, event
from sqlalchemy import exc as sa_exc
from sqlalchemy.dialects import sqlite
from sqlalchemy.engine import URL, Connection, Engine
from sqlalchemy.pool import ConnectionPoolEntry
from sqlalchemy.sql.dml import Insert

from rota.core.connection import ConnectionSettings
from rota.errors import ConfigError
from rota.store.dialects.base import Dialect, server_version
from rota.store.dialects.pooling import standalone
from rota.store.events import EventSink
from rota.store.values import ServerInfo


class SQLiteDialect(Dialect):
    """Claims need no ``SKIP LOCKED``: every transaction takes the write lock up front
    (``BEGIN IMMEDIATE``), so two claimers simply take turns."""

    name = "sqlite"
    product = "SQLite"

    def normalise(self, url: URL) -> URL:
        if url.database in (None, "", ":memory:"):
            raise ConfigError(
                "rota needs a SQLite file shared by its threads, not an in-memory database: "
                "use sqlite:///path/to/rota.db"
            )
        return url

    def database_file(self, url: URL) -> str | None:
        """``None`` for a ``uri=true`` URL, whose database is not a plain path."""
        return None if url.query.get("uri") else url.database

    def engine_options(self, connection: ConnectionSettings) -> dict[str, Any]:
        """A local file: no connection to lose, so no read timeout or keepalive."""
        return {"connect_args": {"timeout": 30}}

    def configure(self, engine: Engine, connection: ConnectionSettings, events: EventSink) -> None:
        @event.listens_for(engine, "connect")
        def _on_connect(dbapi_connection: Any, record: ConnectionPoolEntry) -> None:
            dbapi_connection.isolation_level = None
            cursor = dbapi_connection.cursor()
            cursor.execute("PRAGMA journal_mode=WAL")
            cursor.execute("PRAGMA synchronous=NORMAL")
            cursor.execute("PRAGMA busy_timeout=30000")
            cursor.close()

    def begin(self, connection: Connection) -> None:
        """One writer at a time: a transaction takes the write lock up front, so claims never
        upgrade and deadlock; a statement of its own runs in the driver's autocommit mode
        (``isolation_level`` ``None``), a read without waiting for the writer."""
        if not standalone(connection):
            connection.exec_driver_sql("BEGIN IMMEDIATE")

    def describe_server(self, connection: Connection) -> ServerInfo:
        return ServerInfo(self.product, server_version(connection), "single writer")

    def lock_for_claim(self, query: Select[Any], of: Table | None = None) -> Select[Any]:
        return query

    def insert_ignoring_duplicates(self, table: Table) -> Insert:
        return sqlite.insert(table).on_conflict_do_nothing()

    def is_transient(self, error: sa_exc.DBAPIError) -> bool:
        """Only a busy database: the file is local, so there is no connection to lose."""
        return _busy(error)

    def is_conflict(self, error: sa_exc.DBAPIError) -> bool:
        return not error.connection_invalidated and _busy(error)


def _busy(error: sa_exc.DBAPIError) -> bool:
    message = str(error.orig).lower()
    return isinstance(error, sa_exc.OperationalError) and ("locked" in message or "busy" in message)
