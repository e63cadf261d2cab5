"""A pooled server connection costs no round trip beyond its transaction's own, and a dead one is
still found: by a ping after idling in the pool, or by its first statement, and then the work
is done once on a new connection (issue 18; ``rota.store.dialects.pooling``).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator
from typing import Any

import pytest
from sqlalchemy import event, func, select, text
from sqlalchemy.engine import Connection

from rota import Rota
from rota.store.dialects import pooling
from rota.store.dialects.pooling import transaction_open
from tests.conftest import Database
from tests.helpers import RoundTrips, sql_store


def _noop() -> None: ...


@pytest.fixture
def rota(server_db: Database) -> Iterator[Rota]:
    rota = Rota(server_db.url, table_prefix=server_db.prefix)
    for name in ("warm.up", "counted", "after.kill"):
        rota.task(name=name)(_noop)
    rota.queue("warm.up")  # migrates, and leaves one connection in the pool
    yield rota
    sql_store(rota).engine.dispose()


def test_one_enqueue_is_one_insert_and_one_commit(
    rota: Rota, monkeypatch: pytest.MonkeyPatch
) -> None:
    engine = sql_store(rota).engine
    seen: list[str] = []
    open_at_return: list[bool] = []
    event.listen(engine, "before_cursor_execute", lambda *a: seen.append(a[2].split()[0]))
    event.listen(engine, "commit", lambda *a: seen.append("COMMIT"))
    event.listen(engine, "reset", lambda raw, *a: open_at_return.append(transaction_open(raw)))
    pinged: list[object] = []
    ping = engine.dialect.do_ping

    def counted_ping(raw: object) -> bool:
        pinged.append(raw)
        return ping(raw)  # type: ignore[arg-type]

    monkeypatch.setattr(engine.dialect, "do_ping", counted_ping)
    for _ in range(3):
        rota.queue("counted")
    assert seen == ["INSERT", "COMMIT"] * 3
    assert not pinged, "a connection back in the pool a moment ago is not pinged"
    assert open_at_return == [False] * 3, "nothing to roll back after the commit"


def _session_query(server_db: Database) -> str:
    return "SELECT CONNECTION_ID()" if server_db.backend == "mariadb" else "SELECT pg_backend_pid()"


def _kill_pooled_connection(rota: Rota, server_db: Database) -> None:
    """End, from a session of another engine, the server session of the connection in the
    pool."""
    session: object = sql_store(rota).database.fetch(text(_session_query(server_db)))[0][0]  # type: ignore[arg-type]
    _kill_session(session, server_db)


def _kill_session(session: object, server_db: Database) -> None:
    mariadb = server_db.backend == "mariadb"
    other = server_db.engine()
    try:
        with other.begin() as connection:
            connection.exec_driver_sql(
                f"KILL {session}" if mariadb else f"SELECT pg_terminate_backend({session})"
            )
    finally:
        other.dispose()


def _jobs(rota: Rota, task: str) -> int:
    jobs = sql_store(rota).schema.jobs
    [(count,)] = sql_store(rota).database.fetch(
        select(func.count()).select_from(jobs).where(jobs.c.task == task)
    )
    return int(count)


@pytest.mark.parametrize("idle", [False, True], ids=["in-use", "idled"])
def test_a_dead_pooled_connection_is_found_and_the_job_written_once(
    rota: Rota,
    server_db: Database,
    caplog: pytest.LogCaptureFixture,
    monkeypatch: pytest.MonkeyPatch,
    idle: bool,
) -> None:
    """Killed while in the pool: found by the ping if it idled there (``PING_AFTER_IDLE``,
    here 0), else by the INSERT, which fails before any COMMIT was sent, so the enqueue is
    repeated on a new connection; either way the job exists once."""
    if idle:
        monkeypatch.setattr(pooling, "PING_AFTER_IDLE", 0.0)
    _kill_pooled_connection(rota, server_db)
    with caplog.at_level(logging.INFO, logger="rota.store"):
        job_id = rota.queue("after.kill")
    assert _jobs(rota, "after.kill") == 1
    assert rota.job(job_id).task == "after.kill"
    lost = [r for r in caplog.records if r.message.startswith("lost a database connection")]
    assert lost and all(getattr(r, "pre_ping", None) is idle for r in lost), caplog.text
    repeated = any("repeating the transaction" in r.message for r in caplog.records)
    assert repeated is not idle, caplog.text


def test_a_connection_lost_in_a_transaction_is_dropped_on_return_with_a_warning(
    rota: Rota, server_db: Database, caplog: pytest.LogCaptureFixture
) -> None:
    """Its ``ROLLBACK`` on return fails (as mysqlclient's, which cannot tell whether one is
    needed, does after a blackholed link): rota logs the loss as its own, not as the pool's
    ERROR traceback, the connection is closed, and the next enqueue gets a new one."""
    raw = sql_store(rota).engine.raw_connection()
    cursor = raw.cursor()
    if server_db.backend == "mariadb":  # psycopg opens one with the first statement
        cursor.execute("START TRANSACTION")
    cursor.execute(_session_query(server_db))  # a transaction is open: a ROLLBACK is due
    row = cursor.fetchone()
    cursor.close()
    assert row is not None
    _kill_session(row[0], server_db)
    with caplog.at_level(logging.INFO):
        raw.close()
        job_id = rota.queue("after.kill")
    lost = [r for r in caplog.records if r.message.startswith("lost a database connection")]
    assert [getattr(r, "on_return", None) for r in lost] == [True], caplog.text
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR], caplog.text
    assert rota.job(job_id).task == "after.kill"


def test_a_statement_of_its_own_is_one_round_trip(
    rota: Rota, server_db: Database, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A read or a write alone (an idle worker's look, its heartbeat) runs in autocommit mode:
    no ``BEGIN`` before it, no ``COMMIT`` after; a transaction after it switches back first,
    and after that transaction the next read switches once more."""
    database = sql_store(rota).database
    jobs = sql_store(rota).schema.jobs
    count = select(func.count()).select_from(jobs)
    database.fetch(count)  # the pooled connection is in autocommit mode from here on
    trips = RoundTrips(monkeypatch, server_db.backend)
    for _ in range(3):
        database.fetch(count)
    database.write(jobs.update().where(jobs.c.id == -1).values(attempt=0))
    assert trips.sent == ["SELECT"] * 3 + ["UPDATE"]
    del trips.sent[:]
    rota.queue("counted")
    database.fetch(count)
    # psycopg sends its BEGIN from within the INSERT's execute: the order within is its own.
    switches = ["SET", "INSERT", "COMMIT", "SET"] if server_db.backend == "mariadb" else []
    expected = switches or ["BEGIN", "INSERT", "COMMIT"]
    assert sorted(trips.sent[:-1]) == sorted(expected) and trips.sent[-1] == "SELECT"


def test_a_transaction_after_a_statement_of_its_own_is_still_one(
    rota: Rota, server_db: Database
) -> None:
    """The mode a standalone read left is switched back before the next transaction: its
    statements commit together or not at all."""
    database = sql_store(rota).database
    jobs = sql_store(rota).schema.jobs
    database.fetch(select(func.count()).select_from(jobs))

    def half_done(connection: Connection) -> None:
        connection.execute(jobs.update().values(attempt=7))
        raise RuntimeError("undo")

    with pytest.raises(RuntimeError):
        database.transaction(half_done)
    [(changed,)] = database.fetch(select(func.count()).select_from(jobs).where(jobs.c.attempt == 7))
    assert changed == 0


def _sessions(server_db: Database, ids: list[object]) -> int:
    listed = ", ".join(str(session) for session in ids)
    query = (
        f"SELECT COUNT(*) FROM information_schema.processlist WHERE id IN ({listed})"
        if server_db.backend == "mariadb"
        else f"SELECT COUNT(*) FROM pg_stat_activity WHERE pid IN ({listed})"
    )
    other = server_db.engine()
    try:
        with other.connect() as connection:
            return int(connection.exec_driver_sql(query).scalar_one())
    finally:
        other.dispose()


def test_an_idle_process_keeps_one_connection(rota: Rota, server_db: Database) -> None:
    """Three connections used at once stay pooled while each is used within ``RETIRE_AFTER``;
    once the others have waited unused for longer, each returned meanwhile is closed on the
    server, down to one, and a new burst opens them again."""
    engine = sql_store(rota).engine
    engine.dispose()  # without the connection the fixture's enqueue left
    pool = engine.pool
    assert isinstance(pool, pooling.RetiringPool)
    now = [0.0]
    pool.clock = lambda: now[0]
    burst = [engine.connect() for _ in range(3)]
    sessions = [c.exec_driver_sql(_session_query(server_db)).scalar_one() for c in burst]
    for connection in burst:
        connection.close()
    now[0] = pooling.RETIRE_AFTER / 2
    with engine.connect():
        pass
    assert pool.checkedin() == 3 and _sessions(server_db, sessions) == 3, "busy a moment ago"
    now[0] += pooling.RETIRE_AFTER
    for left in (2, 1, 1):
        with engine.connect() as connection:
            connection.exec_driver_sql("SELECT 1")
        assert pool.checkedin() == left
    assert _sessions(server_db, sessions) == 1
    burst = [engine.connect() for _ in range(2)]
    for connection in burst:
        connection.close()
    assert pool.checkedin() == 2, "busy again: both kept"


def _spied_waits(pool: pooling.RetiringPool) -> threading.Event:
    """An event set when a checkout starts waiting for a connection in use to come back."""
    waiting, returned = threading.Event(), pool._returned

    def spy() -> Any:
        waiting.set()
        return returned()

    pool._returned = spy  # type: ignore[method-assign]
    return waiting


def test_a_burst_of_short_transactions_shares_one_connection(rota: Rota) -> None:
    """A checkout that finds every connection in another thread's hands waits for one to come
    back before opening its own, so the loops of a starting worker share one connection; a
    thread that already holds one never waits for itself; a connection held longer than the
    wait leaves the checkout to open another."""
    engine = sql_store(rota).engine
    engine.dispose()
    pool = engine.pool
    assert isinstance(pool, pooling.RetiringPool)
    pool.burst_wait = 30.0
    waiting = _spied_waits(pool)
    first = engine.connect()
    first.exec_driver_sql("SELECT 1")
    held = first.connection.dbapi_connection
    got: list[object] = []

    def checkout() -> None:
        with engine.connect() as connection:
            got.append(connection.connection.dbapi_connection)

    other = threading.Thread(target=checkout)
    other.start()
    assert waiting.wait(30), "the other thread did not wait"
    first.close()
    other.join()
    assert got == [held] and pool.checkedin() == 1, "one connection served both"
    waiting.clear()
    with engine.connect() as outer, engine.connect() as inner:
        assert not waiting.is_set(), "a thread holding a connection waited for itself"
        assert outer.connection.dbapi_connection is not inner.connection.dbapi_connection
    engine.dispose()  # none left waiting in the pool
    pool = engine.pool
    assert isinstance(pool, pooling.RetiringPool)
    pool.burst_wait = 0.01
    waiting = _spied_waits(pool)
    release, taken = threading.Event(), threading.Event()

    def hold() -> None:
        with engine.connect() as connection:
            connection.exec_driver_sql("SELECT 1")
            taken.set()
            release.wait(30)

    holder = threading.Thread(target=hold)
    holder.start()
    assert taken.wait(30)
    with engine.connect() as connection:
        assert waiting.is_set() and connection.exec_driver_sql("SELECT 1").scalar_one() == 1
    release.set()
    holder.join()
