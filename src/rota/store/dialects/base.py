"""What every backend answers for rota; each subclass holds one backend's differences.

The defaults are what PostgreSQL and SQLite share (``RETURNING`` for inserted ids and claimed
rows); a backend overrides only where it differs, so reading one subclass tells everything
rota does differently there.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import hashlib
import logging
import math
import socket
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any, ClassVar

from sqlalchemy import Select, Table, event, insert
from sqlalchemy import create_engine as sa_create_engine
from sqlalchemy import exc as sa_exc
from sqlalchemy.engine import URL, Connection, Engine, ExceptionContext
from sqlalchemy.engine.interfaces import Dialect as DriverDialect
from sqlalchemy.pool import ConnectionPoolEntry
from sqlalchemy.sql.dml import Insert

from rota.core.connection import ConnectionSettings
from rota.core.events import EventName
from rota.errors import (
    ConfigError,
    InvalidArguments,
    RotaError,
    StoreError,
    TransientStoreError,
    unchained,
)
from rota.store.base import StatementTooLarge
from rota.store.dialects.claiming import ClaimStatements, given, row_dicts
from rota.store.dialects.pooling import lost, standalone, watch_pool
from rota.store.dialects.translation import ConnectFailure, Translation
from rota.store.events import EventSink
from rota.store.secrets import decoded, hide
from rota.store.values import ServerInfo

logger = logging.getLogger("rota.store")
MIGRATION_LOCK = "rota_migrate"
LOCK_NAME_LIMIT = 64
"""MySQL's longest lock name."""
LOCK_POLL = 1
"""Seconds of one try at the migration lock: whole (MySQL's ``GET_LOCK`` takes whole seconds),
and well below any read timeout."""


def tune(settings: ConnectionSettings, sock: socket.socket) -> None:
    """Keepalive and user timeout on one TCP socket; a Unix socket is left as it is."""
    if sock.family not in (socket.AF_INET, socket.AF_INET6):
        return
    idle, interval, count = settings.keepalive_probes()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_KEEPIDLE, idle)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_KEEPINTVL, interval)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_KEEPCNT, count)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_USER_TIMEOUT, settings.user_timeout_ms())


class Dialect:
    """One database backend as rota uses it, chosen once per URL."""

    name: ClassVar[str]
    product: ClassVar[str]
    drivers: ClassVar[Mapping[str, str]] = {}
    """Bare URL schemes and the driver rota ships an extra for (``mysql`` → ``mysql+pymysql``)."""
    announces_new_jobs: ClassVar[bool] = False
    """Whether the jobs table notifies a channel of inserted jobs (migration 0008), which a
    worker can listen on (``store.signals``) instead of waiting for its next poll."""
    groups_by_index_skip: ClassVar[bool] = False
    """Whether a ``GROUP BY`` over an index's leading columns reads one entry per group (MySQL's
    loose index scan), so the claim's levels are one plain statement (``store.candidates``)."""
    joins_lateral: ClassVar[bool] = False
    """Whether a recursive query may step by a ``LATERAL`` subquery's first row: the claim's
    levels then read a priority and its earliest ``run_at`` in one seek (``store.candidates``)."""

    def __init__(self) -> None:
        self.claims = ClaimStatements()

    def normalise(self, url: URL) -> URL:
        """Name the default driver when the URL names none."""
        driver = self.drivers.get(url.drivername)
        return url.set(drivername=driver) if driver else url

    def database_file(self, url: URL) -> str | None:
        """The local file the URL names, which connecting would create; servers have none."""
        return None

    def create_engine(self, url: URL, connection: ConnectionSettings, events: EventSink) -> Engine:
        try:
            engine = sa_create_engine(url, **self.engine_options(connection))
        except (sa_exc.NoSuchModuleError, ImportError) as error:
            raise ConfigError(
                f"no database driver {url.drivername!r} is installed ({error}): install "
                "rota[mysql] or rota[postgres], or name an installed driver"
            ) from None
        event.listen(engine, "begin", self.begin)
        self.configure(engine, connection, events)
        return engine

    def engine_options(self, connection: ConnectionSettings) -> dict[str, Any]:
        raise NotImplementedError

    def configure(self, engine: Engine, connection: ConnectionSettings, events: EventSink) -> None:
        """Say so when a connection dies (server restart, ``KILL``, failover, idle timeout).

        The pool replaces it on its own, found dead before use (pinged after idling, see
        ``pooling``) or mid-transaction, which the caller then sees as a
        ``TransientStoreError``; without this line an operator would never learn that
        connections are being lost.
        """
        watch_pool(engine, events)

        @event.listens_for(engine, "do_connect")
        def _connect(
            driver: DriverDialect,
            record: ConnectionPoolEntry,
            cargs: list[Any],
            cparams: dict[str, Any],
        ) -> Any:
            return self.connect(driver, cargs, cparams)

        @event.listens_for(engine, "handle_error")
        def _on_error(context: ExceptionContext) -> None:
            if self.too_large(context.original_exception):
                # The server closes this connection after refusing a packet, and this one only.
                context.is_disconnect = True
                context.invalidate_pool_on_disconnect = False
            elif self.refuses_writes(context.original_exception):
                # Taken as a lost connection: SQLAlchemy closes this one and marks the pool,
                # so every connection opened before is replaced at its next checkout instead
                # of writing to the same server again (``refuses_writes``).
                context.is_disconnect = True
                events(
                    logger,
                    EventName.DB_READ_ONLY,
                    logging.WARNING,
                    "the database server refused a write as read-only (%s: %s): a replica, "
                    "or a node leaving its cluster; dropping every pooled connection so that "
                    "new ones reach the writer",
                    type(context.original_exception).__name__,
                    context.original_exception,
                )
            elif context.is_disconnect:
                lost(events, context.original_exception, pre_ping=context.is_pre_ping)

    def begin(self, connection: Connection) -> None:
        """Before a connection's first statement: a transaction, or autocommit mode for a
        statement of its own (``pooling.standalone``). psycopg's (and psycopg2's) mode is the
        client's own attribute: switching it costs no round trip."""
        driver: Any = connection.connection.dbapi_connection
        on = standalone(connection)
        if driver.autocommit != on:
            driver.autocommit = on

    def connect(self, driver: DriverDialect, cargs: list[Any], cparams: dict[str, Any]) -> Any:
        """One DB-API connection, opened with ``connect_params``.

        The driver's own errors pass on to SQLAlchemy, which wraps them as usual. Anything else
        it raises while connecting would escape every translation as it is, its ``args``
        holding the password (PyMySQL's ``UnicodeEncodeError`` for a password beyond Latin-1)
        or the whole connection string (psycopg's for one that is not UTF-8), so it becomes a
        ``ConfigError`` (an encoding, an option the driver refused) or a ``StoreError``, which
        says nothing of either and is raised unchained, carried to ``translate_errors`` by a
        ``ConnectFailure``.
        """
        try:
            return driver.connect(*cargs, **self.connect_params(driver.driver, cparams))
        except driver.loaded_dbapi.Error:
            raise
        except Exception as error:
            unchained(ConnectFailure(connect_failure(driver.driver, error, cparams)))

    def connect_params(self, driver: str, params: dict[str, Any]) -> dict[str, Any]:
        """The keywords of the driver's ``connect()``, as this backend needs them."""
        return params

    def describe_server(self, connection: Connection) -> ServerInfo:
        """The server's product and version, and how it keeps two workers off one job."""
        return self.described(
            connection, ServerInfo(self.product, server_version(connection), "yes")
        )

    def described(self, connection: Connection, info: ServerInfo) -> ServerInfo:
        """``info`` with the server this connection reached and why it takes no writes."""
        reached, read_only = self.whereabouts(connection)
        return dataclasses.replace(info, reached=reached, read_only=read_only)

    def whereabouts(self, connection: Connection) -> tuple[str | None, str | None]:
        """``host:port`` this connection reached, and why the server takes no writes (``None``
        when it does)."""
        return None, None

    def statement_limit(self, connection: Connection) -> int:
        """The most bytes one statement may hold on this server, SQL and values together:
        64 MiB where the server's own bound is higher (1 GB on PostgreSQL and SQLite)."""
        return 64 * 1024 * 1024

    def server_time_query(self) -> str | None:
        """The server's current UTC time as a naive timestamp; ``None`` where it is this host's."""
        return None

    @contextlib.contextmanager
    def migration_lock(self, connection: Connection, prefix: str, timeout: float) -> Iterator[None]:
        """Held while migrating, so that processes starting together take turns.

        The lock is named after the database and the table prefix: applications with other
        prefixes on the same server migrate at the same time.  Not getting it within
        ``timeout`` seconds is a ``StoreError`` naming it, never a migration without it.
        """
        name = migration_lock_name(connection.engine.url.database, prefix)
        if not self.take_lock(connection, name, timeout):
            raise StoreError(
                f"migration lock {name!r} not free after {timeout:g} s: another process is "
                "migrating these tables, or a session holds the lock; try again once it is done"
            )
        try:
            yield
        finally:
            if not connection.invalidated:  # a lost session took its lock with it
                connection.rollback()  # whatever an error left open: not to be committed
                self.release_lock(connection, name)
                connection.commit()

    def take_lock(self, connection: Connection, name: str, timeout: float) -> bool:
        """Take the session-level named lock ``name`` in tries of ``LOCK_POLL`` seconds (a
        statement blocked for long would look like a dead link), as many as ``timeout`` takes,
        rounded up, and at least one; whether it was taken. The tries are counted, not timed:
        a try that returns at once (a server that rounds its wait down) cannot make a busy
        loop."""
        tries = max(1, math.ceil(timeout / LOCK_POLL))
        return any(self.try_lock(connection, name, LOCK_POLL) for _ in range(tries))

    def try_lock(self, connection: Connection, name: str, wait: float) -> bool:
        """One try at the named lock, taking up to ``wait`` seconds.  A backend without
        named locks (SQLite: a single writer) has nothing to take."""
        return True

    def release_lock(self, connection: Connection, name: str) -> None:
        """Release what ``take_lock`` took."""

    def lock_for_claim(self, query: Select[Any], of: Table | None = None) -> Select[Any]:
        """Lock the rows ``query`` reads (of ``of`` alone, when it also reads a derived table),
        skipping those another transaction holds."""
        return query.with_for_update(skip_locked=True, of=of)

    def insert_ignoring_duplicates(self, table: Table) -> Insert:
        """An INSERT of the rows given at execution (one or many; SQLAlchemy batches many into
        multi-row statements, compiled once) that skips rows hitting a unique key instead of
        failing the transaction.  Its row count does not say how many it inserted: MySQL counts
        a skipped row as matched, and SQLAlchemy keeps no count of an INSERT on psycopg."""
        raise NotImplementedError

    def insert_unique(
        self, connection: Connection, table: Table, row: Mapping[str, Any]
    ) -> int | None:
        """Insert ``row`` unless it meets a unique key: its id, or ``None`` when it was skipped
        (``RETURNING`` gives a row only for an insert)."""
        statement = self.insert_ignoring_duplicates(table).returning(table.c.id)
        return connection.execute(statement, dict(row)).scalar_one_or_none()

    def insert_ids(
        self, connection: Connection, table: Table, rows: list[dict[str, Any]]
    ) -> list[int]:
        """Insert ``rows`` in multi-row INSERTs (SQLAlchemy batches the executemany); their ids
        in order."""
        statement = insert_statement(table).returning(table.c.id, sort_by_parameter_order=True)
        return list(connection.execute(statement, rows).scalars())

    def claim(
        self,
        connection: Connection,
        table: Table,
        candidates: Select[Any],
        values: Mapping[str, Any],
        parameters: Mapping[str, Any],
    ) -> list[dict[str, Any]]:
        """Give the ``candidates`` (run with ``parameters``) ``values`` and one more attempt;
        return the rows as they now are, in any order (the caller sorts the decoded jobs: a
        row's priority may not even be a number on SQLite).

        With ``RETURNING`` this is one UPDATE over the candidate subquery, built once for each
        candidates statement (a claim keeps them built), with ``values`` as parameters.
        """
        statement = self.claims.returning(table, candidates, values)
        return row_dicts(connection.execute(statement, {**parameters, **given(values)}))

    def claim_rows(
        self,
        connection: Connection,
        table: Table,
        rows: Sequence[Mapping[str, Any]],
        values: Mapping[str, Any],
    ) -> list[dict[str, Any]]:
        """Give ``rows``, read and locked by this transaction, ``values`` and one more attempt
        by id; the rows as they now are, without reading them again."""
        if not rows:
            return []
        ids = [row["id"] for row in rows]
        statement = self.claims.by_id(table, values)
        connection.execute(statement, {"ids": ids, **given(values)})
        return [{**row, **values, "attempt": row["attempt"] + 1} for row in rows]

    def is_transient(self, error: sa_exc.DBAPIError) -> bool:
        """Worth repeating as it is: a lost connection, a deadlock, a lock-wait timeout."""
        raise NotImplementedError

    def is_conflict(self, error: sa_exc.DBAPIError) -> bool:
        """Deadlock, lock-wait timeout or serialisation failure: the transaction was undone."""
        raise NotImplementedError

    def too_large(self, original: BaseException | None) -> bool:
        """The driver's error says the server refused a statement as larger than it takes."""
        return False

    def refuses_writes(self, original: BaseException) -> bool:
        """The driver's error says the server answers but takes no writes: after a failover,
        every pooled connection reaches the old primary, now a replica, whose reads succeed,
        so the pool would keep handing them out. Such an error drops them all (see
        ``configure``); it is transient, since the next connections reach the new writer."""
        return False

    def translate_errors(self, hide_secrets: Callable[[str], str] = str) -> Translation:
        """Map driver exceptions to rota's errors (``translation``).

        A value the database refused (a NUL byte in PostgreSQL text, a number out of range) is
        the caller's ``InvalidArguments``; a statement too large, ``StatementTooLarge``; a
        transient failure is a ``TransientStoreError``; anything else a ``StoreError``.
        ``hide_secrets`` takes the URL's secrets out of the message; the driver's error is
        chained to a statement's error only, never to one of connecting, nor when its text
        held a secret.
        """
        return Translation(self.translated, hide_secrets)

    def translated(self, error: sa_exc.DBAPIError, message: str) -> RotaError:
        if self.too_large(error.orig):  # before the lost connection it also is
            return StatementTooLarge(message)
        if self.is_transient(error):
            return TransientStoreError(message, rolled_back=self.is_conflict(error))
        if isinstance(error, sa_exc.DataError):
            return InvalidArguments(f"the database refused a value: {message}")
        return StoreError(message)


def connect_failure(driver: str, error: Exception, params: Mapping[str, Any]) -> RotaError:
    """What a driver's failure to connect that is no DB-API error means, without the secrets
    in ``params`` (an encoding error quotes what it could not encode: it is not shown)."""
    if isinstance(error, UnicodeError):
        return ConfigError(
            f"the {driver} driver cannot send this URL's user, password or database name: it "
            f"holds characters that {getattr(error, 'encoding', 'its encoding')} cannot encode"
        )
    secrets = [decoded(value) for key, value in params.items() if "pass" in key.lower()]
    shown = hide(f"{type(error).__name__}: {error}", secrets)
    if isinstance(error, (TypeError, ValueError)):  # an option of the URL's query string
        return ConfigError(f"the {driver} driver refused this URL's settings: {shown}")
    return StoreError(f"the {driver} driver failed to connect: {shown}")


@functools.lru_cache(maxsize=64)
def insert_statement(table: Table) -> Insert:
    """``INSERT INTO table``, built once per table: building the construct anew for every
    enqueue was a tenth of a single ``queue()``'s Python time (issue 18)."""
    return insert(table)


def lost_connection(error: sa_exc.DBAPIError) -> bool:
    return bool(error.connection_invalidated) or isinstance(error, sa_exc.InterfaceError)


def server_version(connection: Connection) -> str:
    return ".".join(str(part) for part in connection.dialect.server_version_info or ())


def migration_lock_name(database: str | None, prefix: str) -> str:
    """``rota_migrate:<database>:<prefix>``, or its digest when longer than a MySQL lock name
    may be (a lock on a MySQL server spans all of its databases)."""
    name = f"{MIGRATION_LOCK}:{database or ''}:{prefix}"
    if len(name) <= LOCK_NAME_LIMIT:
        return name
    return f"{MIGRATION_LOCK}:{hashlib.sha256(name.encode()).hexdigest()[:40]}"
