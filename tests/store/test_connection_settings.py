"""Every server connection has bounded silences: read/write timeouts (MySQL/MariaDB), TCP
keepalive and ``TCP_USER_TIMEOUT`` (both servers), set from ``Rota(...)``'s settings.

The network faults themselves (a partition, a blackholed connection) are in
tests/faults/test_network.py; here are the settings as each driver receives them, and a read
timeout surfacing as a lost connection that rota retries.
"""

from __future__ import annotations

import socket
import time
from typing import Any

import pytest
from sqlalchemy import text

from rota import Rota
from rota.config import RotaConfig
from rota.core.connection import ConnectionSettings
from rota.errors import ConfigError, TransientStoreError
from tests.conftest import START, Database
from tests.helpers import sql_store


def test_defaults_and_what_the_kernel_gets() -> None:
    config = RotaConfig("sqlite:///x.db")
    assert (config.read_timeout, config.write_timeout, config.keepalive) == (60.0, 60.0, 15.0)
    settings = config.connection
    idle, interval, count = settings.keepalive_probes()
    assert (idle, interval, count) == (9, 2, 3)
    assert idle + interval * count <= settings.keepalive
    assert settings.user_timeout_ms() == 15_000


@pytest.mark.parametrize("keepalive", [4, 5, 7.5, 10, 15, 30, 61, 3600])
def test_keepalive_probes_never_exceed_the_setting(keepalive: float) -> None:
    idle, interval, count = ConnectionSettings(1, 1, keepalive).keepalive_probes()
    assert idle >= 1 and interval >= 1 and count == 3
    assert keepalive - 2 * interval <= idle + interval * count <= keepalive


@pytest.mark.parametrize(
    "settings",
    [{"read_timeout": 0}, {"write_timeout": -1}, {"keepalive": 3.9}, {"read_timeout": "5"}],
)
def test_bad_values_are_refused(settings: dict[str, Any]) -> None:
    with pytest.raises(ConfigError):
        RotaConfig("sqlite:///x.db", **settings)


def test_a_timedelta_is_stored_as_seconds() -> None:
    from datetime import timedelta

    config = RotaConfig("sqlite:///x.db", read_timeout=timedelta(seconds=90))  # type: ignore[arg-type]
    assert config.read_timeout == 90.0


def test_mariadb_sockets_get_timeouts_keepalive_and_user_timeout(mariadb: Database) -> None:
    rota = Rota(mariadb.url, table_prefix=mariadb.prefix, read_timeout=7, keepalive=10)
    engine = sql_store(rota).engine
    try:
        with engine.connect() as connection:
            raw: Any = connection.connection.dbapi_connection
            sock: socket.socket = raw._sock
            options = [
                sock.getsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE),
                sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_KEEPIDLE),
                sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_KEEPINTVL),
                sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_KEEPCNT),
                sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_USER_TIMEOUT),
            ]
            assert options == [1, 7, 1, 3, 10_000]
            assert (raw._read_timeout, raw._write_timeout) == (7.0, 60.0)
    finally:
        engine.dispose()


def test_postgres_connections_get_libpq_keepalive(postgres: Database) -> None:
    rota = Rota(postgres.url, table_prefix=postgres.prefix, keepalive=10)
    engine = sql_store(rota).engine
    try:
        with engine.connect() as connection:
            dsn = connection.connection.dbapi_connection.info.dsn  # type: ignore[union-attr]
        for part in (
            "keepalives=1",
            "keepalives_idle=7",
            "keepalives_interval=1",
            "keepalives_count=3",
            "tcp_user_timeout=10000",
        ):
            assert part in dsn.split(), dsn
    finally:
        engine.dispose()


def test_mariadb_read_timeout_is_a_lost_connection_retried_once(mariadb: Database) -> None:
    """A statement outliving ``read_timeout``: the connection is dropped as lost (2013), the
    read is repeated once on a new connection, then a ``TransientStoreError`` reaches the
    caller, whose loops back off and retry."""
    rota = Rota(mariadb.url, table_prefix=mariadb.prefix, read_timeout=1)
    database = sql_store(rota).database
    started = time.monotonic()
    try:
        with pytest.raises(TransientStoreError, match="timed out") as raised:
            database.fetch(text("SELECT SLEEP(3)"))  # type: ignore[arg-type]
        elapsed = time.monotonic() - started
        assert not raised.value.rolled_back
        assert 2.0 <= elapsed < 3.5, elapsed
        # The pool opened a fresh connection: the store works at once afterwards.
        assert database.fetch(text("SELECT 1")) == [(1,)]  # type: ignore[arg-type]
    finally:
        database.engine.dispose()


def test_a_row_lock_wait_below_read_timeout_is_a_conflict_not_a_lost_connection(
    mariadb: Database,
) -> None:
    """A lock wait shorter than ``read_timeout`` ends with the server's 1205, a conflict that
    ``Database.transaction`` repeats, not a lost connection; hence ``read_timeout``'s default
    above ``innodb_lock_wait_timeout``'s 50 s."""
    rota = Rota(mariadb.url, table_prefix=mariadb.prefix, read_timeout=6)
    database = sql_store(rota).database
    holder = mariadb.engine()
    table = f"{mariadb.prefix}lockprobe"
    try:
        with holder.begin() as connection:
            connection.execute(text(f"CREATE TABLE {table} (id INT PRIMARY KEY, n INT)"))
            connection.execute(text(f"INSERT INTO {table} VALUES (1, 0)"))
        with holder.connect() as connection:
            connection.execute(text(f"UPDATE {table} SET n = 1 WHERE id = 1"))  # held

            def wait_for_the_row() -> None:
                with database.translate_errors(), database.engine.begin() as waiting:
                    # InnoDB checks lock waits once a second: a 3 s wait ends after 2 to 4 s.
                    waiting.execute(text("SET SESSION innodb_lock_wait_timeout = 3"))
                    waiting.execute(text(f"UPDATE {table} SET n = 2 WHERE id = 1"))

            started = time.monotonic()
            with pytest.raises(TransientStoreError, match="1205") as raised:
                wait_for_the_row()
            assert raised.value.rolled_back, "a conflict, repeated by Database.transaction"
            assert 2.0 <= time.monotonic() - started < 5.0, "it waited, and ended before 6 s"
            connection.rollback()
    finally:
        with holder.begin() as connection:
            connection.execute(text(f"DROP TABLE IF EXISTS {table}"))
        holder.dispose()
        database.engine.dispose()


@pytest.mark.parametrize("options", [None, "-c statement_timeout=0"])
def test_no_postgres_claim_compiles_jit_code(postgres: Database, options: str | None) -> None:
    """Even priced past every JIT threshold (``jit_above_cost`` 0 here, where autovacuum's
    statistics once put a real claim), a claim runs without compiling; options of the URL are
    kept beside rota's."""
    url = postgres.url + (f"?options={options.replace(' ', '%20')}" if options else "")
    rota = Rota(url, table_prefix=postgres.prefix)
    rota.jobs()
    store = sql_store(rota)
    query = store.jobs.candidates.query(["a", "b"], ["noop"], 16, START)
    sql = str(query.compile(store.engine, compile_kwargs={"literal_binds": True}))
    try:
        with store.engine.begin() as connection:
            assert connection.execute(text("SHOW jit")).scalar_one() == "off"
            connection.execute(text("SET LOCAL jit_above_cost = 0"))
            plan = "\n".join(row[0] for row in connection.execute(text(f"EXPLAIN ANALYZE {sql}")))
            if options:
                assert connection.execute(text("SHOW statement_timeout")).scalar_one() == "0"
        assert "JIT" not in plan, plan
        with store.engine.begin() as connection:
            connection.execute(text("SET LOCAL jit = on"))
            assert connection.execute(text("SELECT pg_jit_available()")).scalar_one()
            connection.execute(text("SET LOCAL jit_above_cost = 0"))
            plan = "\n".join(row[0] for row in connection.execute(text(f"EXPLAIN ANALYZE {sql}")))
        assert "JIT" in plan, "this server compiles when asked: the check above can fail"
    finally:
        store.engine.dispose()
