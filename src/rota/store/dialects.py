"""Every PostgreSQL / MySQL / MariaDB / SQLite difference, and driver-error translation.

MySQL 8 versus MariaDB, as far as rota is concerned:

* ``SELECT ... FOR UPDATE SKIP LOCKED``: MySQL 8.0.1+, MariaDB 10.6+; older servers are refused.
* ``RETURNING``: MariaDB has ``INSERT/DELETE ... RETURNING`` but MySQL has none, and neither has
  ``UPDATE ... RETURNING``; rota never uses it on either and reads ids from ``lastrowid``.
* A multi-row ``INSERT ... VALUES`` is a "simple insert": InnoDB reserves its ids in one step,
  ``auto_increment_increment`` apart, so ids are read as ``lastrowid`` plus that step.
* Sessions run at ``READ COMMITTED`` to avoid gap locks on the claim index.
* Connection-loss error codes: 2006/2013 on both, 1927 (connection killed) on MariaDB, 4031
  (idle timeout) on MySQL 8. Deadlock (1213) and lock-wait timeout (1205) are the same on both;
  MySQL 8 also reports 3572 only for ``NOWAIT``, which rota never uses.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Select, Table, event
from sqlalchemy import create_engine as sa_create_engine
from sqlalchemy import exc as sa_exc
from sqlalchemy.dialects import mysql, postgresql, sqlite
from sqlalchemy.engine import URL, Connection, Engine, ExceptionContext, make_url
from sqlalchemy.pool import ConnectionPoolEntry
from sqlalchemy.sql.dml import Insert

from rota.errors import ConfigError, StoreError, TransientStoreError

logger = logging.getLogger("rota.store")
DRIVER_DEFAULTS = {
    "mysql": "mysql+pymysql",
    "mariadb": "mariadb+pymysql",
    "postgresql": "postgresql+psycopg",
    "postgres": "postgresql+psycopg",
}

MYSQL_CONFLICT = frozenset({1205, 1213})
MYSQL_TRANSIENT = MYSQL_CONFLICT | {1040, 1927, 2003, 2006, 2013, 2055, 4031}
MYSQL_UNIQUE = 1062
PG_CONFLICT = ("40001", "40P01", "55P03")
PG_TRANSIENT_PREFIXES = (*PG_CONFLICT, "08", "57P")
PG_UNIQUE = "23505"
PG_CONNECT_RETRYABLE = ("starting up", "shutting down", "in recovery", "too many clients")
"""A ``FATAL`` refusal at connect that passes on its own; others (password, no such database,
``pg_hba.conf``) need a person."""


@dataclass(frozen=True)
class Dialect:
    """What rota needs to know about one database backend, chosen once per engine."""

    name: str
    returning: bool
    skip_locked: bool

    def lock_for_claim(self, query: Select[Any]) -> Select[Any]:
        return query.with_for_update(skip_locked=True) if self.skip_locked else query

    def insert_ignoring_duplicates(self, table: Table, rows: list[dict[str, Any]]) -> Insert:
        """An INSERT that skips rows hitting a unique key instead of failing the transaction.

        PostgreSQL needs ``ON CONFLICT`` because a failed insert aborts the whole transaction;
        MySQL's ``INSERT IGNORE`` would also hide truncation errors, hence the no-op update.
        """
        if self.name == "postgresql":
            return postgresql.insert(table).values(rows).on_conflict_do_nothing()
        if self.name == "sqlite":
            return sqlite.insert(table).values(rows).on_conflict_do_nothing()
        statement = mysql.insert(table).values(rows)
        key = next(iter(table.primary_key.columns))
        return statement.on_duplicate_key_update({key.name: key})

    def server_time_query(self) -> str | None:
        """The server's current UTC time as a naive timestamp; SQLite runs in this process."""
        if self.name == "postgresql":
            return "SELECT clock_timestamp() AT TIME ZONE 'UTC'"
        if self.name == "mysql":
            return "SELECT UTC_TIMESTAMP(6)"
        return None

    def is_transient(self, error: sa_exc.DBAPIError) -> bool:
        if self.name == "sqlite":
            return _sqlite_busy(error)
        if error.connection_invalidated or isinstance(error, sa_exc.InterfaceError):
            return True
        code = _driver_code(error)
        if self.name == "postgresql":
            if code is None:  # psycopg failed to connect: no session, so no SQLSTATE
                return isinstance(error, sa_exc.OperationalError) and not _pg_refused(error)
            return isinstance(code, str) and code.startswith(PG_TRANSIENT_PREFIXES)
        return code in MYSQL_TRANSIENT

    def is_conflict(self, error: sa_exc.DBAPIError) -> bool:
        """Deadlock, lock-wait timeout or serialisation failure: the transaction was undone.

        MySQL undoes only the statement on a lock-wait timeout (unless
        ``innodb_rollback_on_timeout``), but rota then rolls the transaction back itself.
        """
        if error.connection_invalidated:
            return False
        code = _driver_code(error)
        if self.name == "sqlite":
            return _sqlite_busy(error)
        if self.name == "postgresql":
            return code in PG_CONFLICT
        return code in MYSQL_CONFLICT

    def is_unique_violation(self, error: sa_exc.DBAPIError) -> bool:
        if not isinstance(error, sa_exc.IntegrityError):
            return False
        code = _driver_code(error)
        if self.name == "sqlite":
            return "unique" in str(error.orig).lower()
        return code in (PG_UNIQUE, MYSQL_UNIQUE)

    @contextlib.contextmanager
    def translate_errors(self) -> Iterator[None]:
        """Map driver exceptions to ``StoreError`` subclasses, chaining the original."""
        try:
            yield
        except sa_exc.DBAPIError as error:
            message = f"{type(error.orig).__name__}: {error.orig}"
            if self.is_transient(error):
                rolled_back = self.is_conflict(error)
                raise TransientStoreError(message, rolled_back=rolled_back) from error
            raise StoreError(message) from error


def parse_url(url: str | URL) -> URL:
    """``make_url`` whose error never quotes the URL, which may hold a password."""
    try:
        return make_url(url)
    except (sa_exc.ArgumentError, ValueError, TypeError):
        raise ConfigError(
            "not a database URL rota can use, e.g. mysql://user:password@host/database"
        ) from None


def normalise_url(url: str | URL) -> URL:
    """Pick the driver rota ships an extra for when the URL names none."""
    parsed = parse_url(url)
    if parsed.drivername in DRIVER_DEFAULTS:
        parsed = parsed.set(drivername=DRIVER_DEFAULTS[parsed.drivername])
    if parsed.get_backend_name() == "sqlite" and parsed.database in (None, "", ":memory:"):
        raise ConfigError(
            "rota needs a SQLite file shared by its threads, not an in-memory database: "
            "use sqlite:///path/to/rota.db"
        )
    return parsed


def create_engine(url: str | URL) -> tuple[Engine, Dialect]:
    parsed = normalise_url(url)
    try:
        return _create_engine(parsed)
    except (sa_exc.NoSuchModuleError, ImportError) as error:
        raise ConfigError(
            f"no database driver {parsed.drivername!r} is installed ({error}): install "
            "rota[mysql] or rota[postgres], or name an installed driver"
        ) from None


def _create_engine(parsed: URL) -> tuple[Engine, Dialect]:
    backend = parsed.get_backend_name()
    if backend == "sqlite":
        engine = sa_create_engine(parsed, connect_args={"timeout": 30})
        _configure_sqlite(engine)
        return engine, Dialect("sqlite", returning=True, skip_locked=False)
    if backend == "postgresql":
        engine = sa_create_engine(parsed, pool_pre_ping=True, connect_args={"connect_timeout": 5})
        _log_disconnects(engine)
        return engine, Dialect("postgresql", returning=True, skip_locked=True)
    if backend in ("mysql", "mariadb"):
        engine = sa_create_engine(
            parsed,
            pool_pre_ping=True,
            pool_recycle=3600,
            isolation_level="READ COMMITTED",
            connect_args={"connect_timeout": 5, "charset": "utf8mb4"},
        )
        _log_disconnects(engine)
        return engine, Dialect("mysql", returning=False, skip_locked=True)
    raise ConfigError(f"unsupported database {backend!r}: use sqlite, postgresql or mysql")


def check_server(connection: Connection, dialect: Dialect) -> str:
    """Refuse servers without the locking rota relies on; return a printable version."""
    version = connection.dialect.server_version_info or ()
    text = ".".join(str(part) for part in version)
    if dialect.name == "mysql":
        mariadb = bool(getattr(connection.dialect, "is_mariadb", False))
        minimum = (10, 6) if mariadb else (8, 0, 1)
        if tuple(version[: len(minimum)]) < minimum:
            product = "MariaDB" if mariadb else "MySQL"
            raise ConfigError(
                f"{product} {text} has no SKIP LOCKED; rota needs "
                f"{'.'.join(map(str, minimum))} or later"
            )
        return f"{'MariaDB' if mariadb else 'MySQL'} {text}"
    if dialect.name == "postgresql":
        return f"PostgreSQL {text}"
    return f"SQLite {text}"


def describe_url(url: str | URL) -> str:
    """The URL without its password, for logs and errors."""
    parsed = parse_url(url)
    host = f"{parsed.host}:{parsed.port}" if parsed.port else (parsed.host or "")
    return f"{parsed.get_backend_name()} database {parsed.database!r} on {host or 'local file'}"


def _log_disconnects(engine: Engine) -> None:
    """Say so when a connection dies (server restart, ``KILL``, failover, idle timeout).

    The pool replaces it on its own, found dead before use (pre-ping) or mid-transaction,
    which the caller then sees as a ``TransientStoreError``; without this line an operator
    would never learn that connections are being lost.
    """

    @event.listens_for(engine, "handle_error")
    def _on_error(context: ExceptionContext) -> None:
        if context.is_disconnect:
            logger.warning(
                "lost a database connection (%s: %s); the pool will open a new one",
                type(context.original_exception).__name__,
                context.original_exception,
                extra={"event": "db.disconnected", "pre_ping": context.is_pre_ping},
            )


def _configure_sqlite(engine: Engine) -> None:
    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_connection: Any, record: ConnectionPoolEntry) -> None:
        dbapi_connection.isolation_level = None
        cursor = dbapi_connection.cursor()
        cursor.execute("PRAGMA journal_mode=WAL")
        cursor.execute("PRAGMA synchronous=NORMAL")
        cursor.execute("PRAGMA busy_timeout=30000")
        cursor.close()

    @event.listens_for(engine, "begin")
    def _on_begin(connection: Connection) -> None:
        # One writer at a time: take the write lock up front so claims never upgrade and deadlock.
        connection.exec_driver_sql("BEGIN IMMEDIATE")


def _sqlite_busy(error: sa_exc.DBAPIError) -> bool:
    message = str(error.orig).lower()
    return isinstance(error, sa_exc.OperationalError) and ("locked" in message or "busy" in message)


def _pg_refused(error: sa_exc.DBAPIError) -> bool:
    """The server answered the connection attempt with a refusal that will not pass."""
    message = str(error.orig)
    return "FATAL" in message and not any(reason in message for reason in PG_CONNECT_RETRYABLE)


def _driver_code(error: sa_exc.DBAPIError) -> object:
    """PostgreSQL's SQLSTATE, or MySQL's error number.

    PyMySQL 1.2+ also carries a SQLSTATE, but MySQL's is too coarse to tell a deadlock from
    a lock-wait timeout (and a ``SIGNAL`` may set any), so the number wins there.
    """
    original = error.orig
    args = getattr(original, "args", ())
    if args and isinstance(args[0], int):
        return args[0]
    return getattr(original, "sqlstate", None) or None
