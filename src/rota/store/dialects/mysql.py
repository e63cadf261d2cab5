"""MySQL 8 and MariaDB: locking, ids without ``RETURNING``, error numbers, engine settings.

MySQL 8 versus MariaDB, as far as rota is concerned:

* ``SELECT ... FOR UPDATE SKIP LOCKED``: MySQL 8.0.1+, MariaDB 10.6+; older servers are refused.
  The version is read from ``@@version`` (``server_release``): MySQL's ``8.0.36`` or
  ``8.4.3-log``, MariaDB's ``10.11.19-MariaDB-0+deb12u1`` (before 11.0, ``5.5.5-10.11.6-MariaDB``
  as the handshake gives it), Aurora MySQL 3's community version with ``@@aurora_version``, or
  the engine version ``8.0.mysql_aurora.3.05.2`` (every Aurora MySQL 3 is MySQL 8.0.23 or later).
* ``RETURNING``: MariaDB has ``INSERT/DELETE ... RETURNING`` but MySQL has none, and neither has
  ``UPDATE ... RETURNING``; rota never uses it on either and reads ids from ``lastrowid``.
* A multi-row ``INSERT ... VALUES`` is a "simple insert": InnoDB reserves its ids in one step,
  ``auto_increment_increment`` apart, so ids are read as ``lastrowid`` plus that step.
* Sessions run at ``READ COMMITTED`` to avoid gap locks on the claim index.
* Connection-loss error codes: 2006/2013 on both, 1927 (connection killed) on MariaDB, 4031
  (idle timeout) on MySQL 8. Not reaching the server is 2003 on PyMySQL, whatever the cause;
  mysqlclient over MariaDB Connector/C reports a refused connection as 2002 (2003 over
  libmysqlclient), a connect timeout as 2013 and an unknown host as 2005: all are transient,
  so a worker waits for its server on either driver. Deadlock (1213) and lock-wait timeout
  (1205) are the same on both; MySQL 8 also reports 3572 only for ``NOWAIT``, which rota never
  uses. Group Replication undoes a transaction that fails certification, reported as 3101
  (or 3100, the ``before_commit`` hook's error): repeated as a deadlock is.
* Failover (issue 21): a server that answers but takes no writes reports 1290 (running with
  ``--read-only``, MySQL's ``--super-read-only`` too), 1836 (read-only mode) or 1792
  (read-only transaction); a Galera node outside the primary component 1047 ("WSREP has not
  yet prepared node for application use"), and a certification failure 1213. 1180 is an
  error during ``COMMIT``. All are transient; the four of a server that cannot take rota's
  writes also drop every pooled connection (``refuses_writes``), so that the next connection,
  through haproxy, ProxySQL or a DNS name that follows the primary, reaches the new writer.
  The drivers connect to one host only: a URL naming several is a ``ConfigError``. An SSL
  handshake failure (2026) is not transient: a certificate that does not verify needs a person.
* Statement size: the drivers write values into a statement's text, sent as one packet, and
  the server refuses one larger than ``max_allowed_packet`` (16 MiB on MariaDB 10.11, 64 MiB on
  MySQL 8, 4 MiB on older servers) with 1153, closing the connection; a much larger one may be
  cut off as a lost connection instead. rota reads the setting once per store and keeps each
  statement below it (``store.sizes``).
* Silences (the same on both, client-side): PyMySQL's ``read_timeout``/``write_timeout`` bound
  each wait on the socket, and a timeout closes the connection as error 2013 ("Lost connection
  ... (timed out)"), which rota reports as a lost connection (``TransientStoreError``). PyMySQL
  has no keepalive setting of its own (it turns ``SO_KEEPALIVE`` on with the kernel's two-hour
  idle), so ``TCP_KEEPIDLE``/``KEEPINTVL``/``KEEPCNT`` and ``TCP_USER_TIMEOUT`` are set on each
  new socket, mysqlclient's too (through its ``fileno()``). mysqlclient takes whole seconds
  only, so rota rounds each timeout up (a ``read_timeout`` of 2.5 waits 3 s); over MariaDB
  Connector/C that is one wait, but MySQL documents libmysqlclient as retrying a timed-out
  read, up to three times ``read_timeout`` in all (a write: twice ``write_timeout``). A read
  timeout cannot tell a dead link from a long wait, so it must stay above the
  longest wait rota's statements can meet: a row-lock wait of ``innodb_lock_wait_timeout``
  (50 s by default on both); the migration lock waits in ``GET_LOCK`` tries of 1 s (MySQL reads
  the timeout as whole seconds: 0.3 would be 0, no wait at all). MySQL 8 has
  ``MAX_EXECUTION_TIME`` and MariaDB ``max_statement_time``, server-side bounds on how long a
  statement runs; neither notices a dead link (the server cannot tell the client), so rota sets
  none. MySQL 8 closes idle sessions after ``wait_timeout`` with error 4031 first, MariaDB
  silently; the ping of a connection that idled in the pool (``pooling``) covers both.
"""

from __future__ import annotations

import contextlib
import math
import os
import re
import socket
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Select, Table, event, text
from sqlalchemy import exc as sa_exc
from sqlalchemy.dialects import mysql
from sqlalchemy.engine import URL, Connection, Engine
from sqlalchemy.pool import ConnectionPoolEntry
from sqlalchemy.sql.dml import Insert

from rota.core.connection import ConnectionSettings
from rota.core.urls import SEVERAL_HOSTS, several_hosts_message
from rota.errors import ConfigError
from rota.store.dialects.base import Dialect, lost_connection, tune
from rota.store.dialects.claiming import row_dicts
from rota.store.dialects.mysql_inserts import insert_ids
from rota.store.dialects.pooling import SERVER_POOL_OPTIONS, standalone
from rota.store.events import EventSink
from rota.store.secrets import encoded
from rota.store.values import ServerInfo

CONFLICT = frozenset({1205, 1213, 3100, 3101})
"""The transaction was undone: lock-wait timeout, deadlock (Galera's certification failure too),
Group Replication's certification failure (3101, or 3100 from its commit hook)."""
NOT_WRITABLE = frozenset({1047, 1290, 1792, 1836})
"""The server answers but cannot take rota's writes: a replica, a Galera node not ready."""
TRANSIENT = CONFLICT | NOT_WRITABLE | {1040, 1180, 1927, 2002, 2003, 2005, 2006, 2013, 2055, 4031}
PACKET_TOO_LARGE = 1153
"""A statement larger than ``max_allowed_packet``: the server refuses it and closes the
connection (a much larger one may instead be cut off as a lost connection, 2006 or 2013)."""
WRITE_SETTINGS = (
    "version",
    "aurora_version",
    "read_only",
    "super_read_only",
    "innodb_read_only",
    "wsrep_on",
    "hostname",
    "port",
)
"""The server variables that tell what the server is, where a connection is and whether it takes
writes; one the server lacks (MariaDB has no ``super_read_only``, MySQL no ``wsrep_on``, only
Aurora has ``aurora_version``) is left out of its answer."""
MINIMUM = {"MariaDB": (10, 6), "MySQL": (8, 0, 1)}
"""The first release of each with ``SKIP LOCKED``."""
AURORA_8 = (8, 0, 23)
"""The MySQL every Aurora MySQL 3 (the 8.0 line) is at least."""
MARIADB_RELEASE = re.compile(r"(\d+)\.(\d+)\.(\d+)-MariaDB", re.IGNORECASE)
AURORA_ENGINE = re.compile(r"(\d+)\.(\d+)\.mysql_aurora\.([\d.]+)")
MYSQL_RELEASE = re.compile(r"(\d+)\.(\d+)\.(\d+)")
TIMEOUTS = ("connect_timeout", "read_timeout", "write_timeout")


class MySQLDialect(Dialect):
    name = "mysql"
    product = "MySQL"
    drivers = {"mysql": "mysql+pymysql", "mariadb": "mariadb+pymysql"}
    groups_by_index_skip = True

    def normalise(self, url: URL) -> URL:
        """One host, or a ``ConfigError`` saying what to use instead of several."""
        listed = url.query.get("host", "")
        hosts = [url.host or "", *([listed] if isinstance(listed, str) else listed)]
        if len([host for host in hosts if host]) > 1 or any("," in host for host in hosts):
            raise ConfigError(several_hosts_message(SEVERAL_HOSTS["mysql"]))
        return super().normalise(url)

    def engine_options(self, connection: ConnectionSettings) -> dict[str, Any]:
        return {
            **SERVER_POOL_OPTIONS,
            "pool_recycle": 3600,
            "isolation_level": "READ COMMITTED",
            # PyMySQL sends ROLLBACK even in autocommit mode, where nothing is open to undo.
            "skip_autocommit_rollback": True,
            "connect_args": {
                "connect_timeout": 5,
                "charset": "utf8mb4",
                "read_timeout": connection.read_timeout,
                "write_timeout": connection.write_timeout,
            },
        }

    def connect_params(self, driver: str, params: dict[str, Any]) -> dict[str, Any]:
        """PyMySQL's password as UTF-8 bytes, as the ``mariadb`` and ``mysql`` clients send it;
        mysqlclient's timeouts in whole seconds, the only ones it takes.

        Given a string, PyMySQL encodes it as Latin-1: a password beyond Latin-1 cannot be sent
        at all, and one within it (``é``) is sent as bytes other than those the server hashed
        when the account was made over a UTF-8 connection. Bytes that were not UTF-8 in the
        first place (an environment variable in another encoding) are sent as they were.
        mysqlclient (``mysqldb``, what Django uses) sends a string password as UTF-8 already.
        """
        if driver == "mysqldb":
            timeouts = {key: math.ceil(params[key]) for key in TIMEOUTS if key in params}
            return {**params, **timeouts}
        password = params.get("password")
        if driver != "pymysql" or not isinstance(password, str):
            return params
        return {**params, "password": encoded(password)}

    def configure(self, engine: Engine, connection: ConnectionSettings, events: EventSink) -> None:
        super().configure(engine, connection, events)

        @event.listens_for(engine, "connect")
        def _on_connect(dbapi_connection: Any, record: ConnectionPoolEntry) -> None:
            with _driver_socket(dbapi_connection) as sock:
                if sock is not None:
                    tune(connection, sock)

    def begin(self, connection: Connection) -> None:
        """The mode is switched by a statement (as the driver's ``autocommit()`` would send),
        only when the server's last answer (``get_autocommit``, read locally) says it differs,
        and through ``connection`` so that a connection lost meanwhile fails as any statement
        does."""
        on = standalone(connection)
        if connection.connection.dbapi_connection.get_autocommit() != on:  # type: ignore[union-attr]
            connection.exec_driver_sql(f"SET autocommit = {int(on)}")

    def describe_server(self, connection: Connection) -> ServerInfo:
        """MariaDB 10.6+ or MySQL 8.0.1+ (``server_release``), where the connection is and
        whether the server takes writes, in one round trip (two on Galera); an older server,
        or one whose version cannot be read, is described with the reason it is not enough."""
        settings = _settings(connection)
        release = server_release(settings.get("version", ""), settings.get("aurora_version"))
        reached, read_only = _whereabouts(connection, settings)
        minimum = MINIMUM[release.product]
        if release.number[: len(minimum)] >= minimum:
            problem = None
        elif release.number:
            needed = ".".join(map(str, minimum))
            problem = f"{release} has no SKIP LOCKED; rota needs {needed} or later"
        else:
            problem = f"cannot tell the version of {release}; rota needs MySQL 8.0.1 or later"
        skip_locked = "no" if problem else "yes"
        return ServerInfo(release.product, release.shown, skip_locked, problem, reached, read_only)

    def server_time_query(self) -> str:
        return "SELECT UTC_TIMESTAMP(6)"

    def statement_limit(self, connection: Connection) -> int:
        """``max_allowed_packet``: the drivers write values into the statement's text, and the
        server refuses a statement larger than that in bytes."""
        return int(connection.exec_driver_sql("SELECT @@max_allowed_packet").scalar_one())

    def insert_ignoring_duplicates(self, table: Table) -> Insert:
        """``INSERT IGNORE`` would also hide truncation errors, hence a no-op update instead."""
        statement = mysql.insert(table)
        key = next(iter(table.primary_key.columns))
        return statement.on_duplicate_key_update({key.name: key})

    def insert_unique(
        self, connection: Connection, table: Table, row: Mapping[str, Any]
    ) -> int | None:
        """MySQL 8 has no ``INSERT ... RETURNING`` (MariaDB has): the id the server reports,
        0 when the no-op update of a duplicate ran instead."""
        inserted = connection.execute(self.insert_ignoring_duplicates(table), dict(row))
        return inserted.lastrowid or None

    def insert_ids(
        self, connection: Connection, table: Table, rows: list[dict[str, Any]]
    ) -> list[int]:
        return insert_ids(connection, table, rows)

    def lock_for_claim(self, query: Select[Any], of: Table | None = None) -> Select[Any]:
        """Without ``OF``, which MariaDB lacks: InnoDB locks the rows of tables it reads, and
        a derived table's are none of them."""
        return query.with_for_update(skip_locked=True)

    def claim(
        self,
        connection: Connection,
        table: Table,
        candidates: Select[Any],
        values: Mapping[str, Any],
        parameters: Mapping[str, Any],
    ) -> list[dict[str, Any]]:
        """The candidates are locked by the SELECT, then updated by id."""
        rows = row_dicts(connection.execute(candidates, parameters))
        return self.claim_rows(connection, table, rows, values)

    def try_lock(self, connection: Connection, name: str, wait: float) -> bool:
        """``GET_LOCK`` waiting ``wait`` seconds rounded up to whole ones, at least one (MySQL
        reads its timeout as whole seconds: 0.3 would not wait at all): 1 when taken, 0 when
        the wait ran out, NULL on an error (a killed session), which is no lock either."""
        seconds = max(1, math.ceil(wait))
        taken = connection.execute(
            text("SELECT GET_LOCK(:name, :wait)"), {"name": name, "wait": seconds}
        )
        return taken.scalar() == 1

    def release_lock(self, connection: Connection, name: str) -> None:
        connection.execute(text("SELECT RELEASE_LOCK(:name)"), {"name": name})

    def is_transient(self, error: sa_exc.DBAPIError) -> bool:
        return lost_connection(error) or _errno(error.orig) in TRANSIENT

    def refuses_writes(self, original: BaseException) -> bool:
        return _errno(original) in NOT_WRITABLE

    def too_large(self, original: BaseException | None) -> bool:
        return _errno(original) == PACKET_TOO_LARGE

    def is_conflict(self, error: sa_exc.DBAPIError) -> bool:
        """MySQL undoes only the statement on a lock-wait timeout (unless
        ``innodb_rollback_on_timeout``), but rota then rolls the transaction back itself."""
        return not error.connection_invalidated and _errno(error.orig) in CONFLICT


@contextlib.contextmanager
def _driver_socket(dbapi_connection: Any) -> Iterator[socket.socket | None]:
    """The connection's socket: PyMySQL's own, or one over a duplicate of mysqlclient's
    descriptor (options set through it are the socket's; closing it leaves the connection's);
    ``None`` for a driver that shows neither."""
    sock = getattr(dbapi_connection, "_sock", None)
    fileno = getattr(dbapi_connection, "fileno", None)
    if isinstance(sock, socket.socket) or not callable(fileno):
        yield sock if isinstance(sock, socket.socket) else None
        return
    with socket.socket(fileno=os.dup(fileno())) as duplicate:
        yield duplicate


@dataclass(frozen=True)
class Release:
    """A server's product and version, as ``server_release`` reads them."""

    product: str
    """``MySQL`` or ``MariaDB``."""
    number: tuple[int, ...]
    """What its features are compared by; empty when the version could not be read."""
    shown: str

    def __str__(self) -> str:
        return f"{self.product} {self.shown}"


def server_release(version: str, aurora: str | None = None) -> Release:
    """What ``@@version`` (and Aurora's ``@@aurora_version``) say the server is.

    MariaDB names itself after its version; an Aurora engine version gives only the MySQL line
    (8.0), whose every release is ``AURORA_8`` or later; anything else is MySQL, read from its
    first three numbers (a suffix such as ``-log`` or Percona's ``-28`` is left out).
    """
    mariadb = MARIADB_RELEASE.search(version)
    if mariadb is not None:
        return Release("MariaDB", tuple(map(int, mariadb.groups())), ".".join(mariadb.groups()))
    engine = AURORA_ENGINE.match(version)
    if engine is not None:
        line = (int(engine[1]), int(engine[2]))
        number = AURORA_8 if line == AURORA_8[:2] else line
        return Release("MySQL", number, f"{engine[1]}.{engine[2]} (Aurora MySQL {engine[3]})")
    mysql_release = MYSQL_RELEASE.match(version)
    if mysql_release is None:
        return Release("MySQL", (), repr(version))
    shown = ".".join(mysql_release.groups())
    if aurora:
        shown += f" (Aurora MySQL {aurora})"
    return Release("MySQL", tuple(map(int, mysql_release.groups())), shown)


def _whereabouts(connection: Connection, settings: Mapping[str, str]) -> tuple[str, str | None]:
    """The URL's host and port with the node the server calls itself (``@@hostname``,
    ``@@port``: behind a proxy, the only way to tell which node answered); read-only when
    ``read_only``, MySQL's ``super_read_only`` or ``innodb_read_only`` is on, or on a Galera
    node (``wsrep_on``) that is not ready (``wsrep_ready``)."""
    url = connection.engine.url
    node = f"{settings.get('hostname')}:{settings.get('port')}"
    reached = f"{url.host or 'localhost'}:{url.port or 3306} (node {node})"
    for name in ("super_read_only", "read_only", "innodb_read_only"):
        if settings.get(name) == "ON":
            return reached, f"{name} is on (a replica, or a primary being demoted)"
    if settings.get("wsrep_on") == "ON":
        ready = connection.exec_driver_sql("SHOW GLOBAL STATUS LIKE 'wsrep_ready'").first()
        if ready is not None and ready[1] != "ON":
            return reached, "wsrep_ready is OFF: this Galera node is not in the primary component"
    return reached, None


def _errno(original: BaseException | None) -> int | None:
    """The server's error number in the driver's exception.

    PyMySQL 1.2+ also carries a SQLSTATE, but MySQL's is too coarse to tell a deadlock from
    a lock-wait timeout (and a ``SIGNAL`` may set any), so the number decides.
    """
    args = getattr(original, "args", ())
    return args[0] if args and isinstance(args[0], int) else None


def _settings(connection: Connection) -> dict[str, str]:
    """``WRITE_SETTINGS`` as the server has them, by name, in one round trip on either product."""
    names = ", ".join(f"'{name}'" for name in WRITE_SETTINGS)
    query = f"SHOW GLOBAL VARIABLES WHERE Variable_name IN ({names})"
    return {str(name): str(value) for name, value in connection.exec_driver_sql(query)}
