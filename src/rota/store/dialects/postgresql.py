"""PostgreSQL: ``ON CONFLICT``, SQLSTATEs, refusals at connect, advisory locks, engine settings.

A silent peer is found by libpq's TCP keepalive (``keepalives_*``) and ``tcp_user_timeout``, as
``keepalive`` sets them; a dead socket then fails the statement as a lost connection. libpq has no
read timeout: ``read_timeout`` does not apply here. ``statement_timeout`` would bound how long a
statement runs, not notice a dead link (the server's cancel cannot reach the client), and would
cut legitimate waits (the migration's advisory lock, a long migration), so rota sets none.

Failover (issue 21): libpq takes several hosts (``?host=a:5432,b:5432``, or ``host=a&host=b``,
or ``host=a,b&port=5432,5433``) and, with ``target_session_attrs=read-write``, connects to the
one that takes writes; ``connect_timeout`` and the keepalives apply to each. A standby refuses
a write with 25006 (``read_only_sql_transaction``), as does a database whose
``default_transaction_read_only`` is on: transient, and the pool is dropped (``refuses_writes``)
so that the next connection finds the new primary. 57P01-57P03 (shutdown, crash, not yet
accepting connections) and 08 (connection errors) are transient too.
"""

from __future__ import annotations

import time
from typing import Any

from sqlalchemy import Table, bindparam, func, insert, select, text
from sqlalchemy import exc as sa_exc
from sqlalchemy.dialects import postgresql
from sqlalchemy.engine import URL, Connection
from sqlalchemy.sql.dml import Insert

from rota.core.connection import ConnectionSettings
from rota.store.dialects.base import Dialect, lost_connection
from rota.store.dialects.pooling import SERVER_POOL_OPTIONS

CONFLICT = ("40001", "40P01", "55P03")
READ_ONLY = "25006"
TRANSIENT_PREFIXES = (*CONFLICT, READ_ONLY, "08", "57P")
CONNECT_RETRYABLE = (
    "starting up",
    "shutting down",
    "in recovery",
    "accepting connections",
    "too many clients",
)
"""A ``FATAL`` refusal at connect that passes on its own; others (password, no such database,
``pg_hba.conf``) need a person."""
NO_JIT = "-c jit=off"
"""rota's statements are short and run thousands of times a second: compiling one costs far more
than it saves. Once autovacuum's statistics put a claim's estimated cost past
``jit_above_cost`` (the dependency check is charged per candidate row), every claim compiled
JIT code: 48 ms of server time where 6 ms ran it (issue 32)."""


class PostgreSQLDialect(Dialect):
    name = "postgresql"
    product = "PostgreSQL"
    drivers = {"postgresql": "postgresql+psycopg", "postgres": "postgresql+psycopg"}
    announces_new_jobs = True
    joins_lateral = True

    def normalise(self, url: URL) -> URL:
        """``host=a:5432,b:5433`` as SQLAlchemy takes it (``host=a:5432&host=b:5433``): given
        as one string, it would pass ``a:5432`` to libpq as a host name."""
        listed = url.query.get("host")
        if isinstance(listed, str) and "," in listed and ":" in listed and "port" not in url.query:
            url = url.update_query_dict({"host": listed.split(",")})
        return super().normalise(url)

    def engine_options(self, connection: ConnectionSettings) -> dict[str, Any]:
        idle, interval, count = connection.keepalive_probes()
        return {
            **SERVER_POOL_OPTIONS,
            "connect_args": {
                "connect_timeout": 5,
                "keepalives": 1,
                "keepalives_idle": idle,
                "keepalives_interval": interval,
                "keepalives_count": count,
                "tcp_user_timeout": connection.user_timeout_ms(),
            },
        }

    def connect_params(self, driver: str, params: dict[str, Any]) -> dict[str, Any]:
        """Each connection of rota's turns JIT compilation off (``NO_JIT``); ``options`` of the
        URL follow it, so a URL that sets ``jit`` itself keeps its own."""
        given = params.get("options")
        return {**params, "options": f"{NO_JIT} {given}" if given else NO_JIT}

    def whereabouts(self, connection: Connection) -> tuple[str | None, str | None]:
        """The host and port libpq connected to (of several, the one it chose), with the
        server's own address when it differs (behind a proxy); read-only in recovery (a
        standby) or when the session's transactions are (``default_transaction_read_only``)."""
        info = getattr(connection.connection.dbapi_connection, "info", None)
        reached = f"{getattr(info, 'host', '?')}:{getattr(info, 'port', '?')}"
        row = connection.exec_driver_sql(
            "SELECT host(inet_server_addr()), inet_server_port(), pg_is_in_recovery(), "
            "current_setting('default_transaction_read_only'), "
            "current_setting('transaction_read_only')"
        ).one()
        address, port, recovery, default_read_only, read_only = row
        if address is not None and f"{address}:{port}" != reached:
            reached += f" (node {address}:{port})"
        if recovery:
            return reached, "in recovery: a standby"
        if read_only == "on":
            setting = "default_" if default_read_only == "on" else ""
            return reached, f"{setting}transaction_read_only is on"
        return reached, None

    def server_time_query(self) -> str:
        return "SELECT clock_timestamp() AT TIME ZONE 'UTC'"

    def insert_ignoring_duplicates(self, table: Table) -> Insert:
        """``ON CONFLICT``, because a failed insert would abort the whole transaction."""
        return postgresql.insert(table).on_conflict_do_nothing()

    def insert_ids(
        self, connection: Connection, table: Table, rows: list[dict[str, Any]]
    ) -> list[int]:
        """Many rows as one ``INSERT ... SELECT FROM unnest(...) WITH ORDINALITY``: each column
        travels as one array parameter, which psycopg adapts in one go, where a multi-row
        ``VALUES`` binds a parameter per value (issue 18). The rows are inserted in ordinality
        order, so the sequence hands out their ids in that order: sorted, the ids are in the
        order of ``rows``. One row keeps the plain ``INSERT ... RETURNING``."""
        if len(rows) == 1:
            return super().insert_ids(connection, table, rows)
        keys = list(rows[0])
        arrays = [
            bindparam(f"column_{n}", [row[key] for row in rows], type_=_array(table, key))
            for n, key in enumerate(keys)
        ]
        source = func.unnest(*arrays).table_valued(*keys, with_ordinality="ordinality")
        source = source.render_derived()
        ordered = select(*(source.c[key] for key in keys)).order_by(source.c.ordinality)
        statement = insert(table).from_select(keys, ordered).returning(table.c.id)
        return sorted(connection.execute(statement).scalars())

    def try_lock(self, connection: Connection, name: str, wait: float) -> bool:
        """A session advisory lock keyed by the name's hash (advisory locks are per database);
        ``pg_try_advisory_lock`` does not wait, so a miss sleeps out ``wait``."""
        key = {"name": name}
        if connection.execute(text("SELECT pg_try_advisory_lock(hashtext(:name))"), key).scalar():
            return True
        time.sleep(wait)
        return False

    def release_lock(self, connection: Connection, name: str) -> None:
        connection.execute(text("SELECT pg_advisory_unlock(hashtext(:name))"), {"name": name})

    def is_transient(self, error: sa_exc.DBAPIError) -> bool:
        if lost_connection(error):
            return True
        code = _sqlstate(error.orig)
        if code is None:  # psycopg failed to connect: no session, so no SQLSTATE
            return isinstance(error, sa_exc.OperationalError) and not _refused(error)
        return code.startswith(TRANSIENT_PREFIXES)

    def is_conflict(self, error: sa_exc.DBAPIError) -> bool:
        return not error.connection_invalidated and _sqlstate(error.orig) in CONFLICT

    def refuses_writes(self, original: BaseException) -> bool:
        return _sqlstate(original) == READ_ONLY


def _array(table: Table, key: str) -> postgresql.ARRAY[Any]:
    return postgresql.ARRAY(table.c[key].type)


def _sqlstate(original: BaseException | None) -> str | None:
    code = getattr(original, "sqlstate", None)
    return code if isinstance(code, str) and code else None


def _refused(error: sa_exc.DBAPIError) -> bool:
    """The server answered the connection attempt with a refusal that will not pass."""
    message = str(error.orig)
    return "FATAL" in message and not any(reason in message for reason in CONNECT_RETRYABLE)
