"""Which driver errors rota repeats, for PyMySQL with and without a SQLSTATE, and psycopg.

PyMySQL 1.2 started to carry the server's SQLSTATE, which for a deadlock (``40001``) says
nothing about the error number that tells it apart; the number must decide. A failover's errors
are transient (issue 21), and those of a server that answers but takes no writes (a replica, a
Galera node outside the primary component) also drop the whole pool: ``refuses_writes``. MySQL
Group Replication undoes a transaction that fails certification (3101, or 3100 from its commit
hook): repeated as a deadlock is.
"""

from __future__ import annotations

import sqlite3

import psycopg
import pymysql
import pytest
from sqlalchemy import exc as sa_exc

from rota.store.database import may_repeat
from rota.store.dialects import MySQLDialect, PostgreSQLDialect, SQLiteDialect

MYSQL = MySQLDialect()
POSTGRES = PostgreSQLDialect()


def mysql_error(errno: int, sqlstate: str | None) -> sa_exc.DBAPIError:
    try:
        original = pymysql.err.OperationalError(errno, "message", sqlstate=sqlstate)
    except TypeError:  # PyMySQL before 1.2 takes no SQLSTATE
        original = pymysql.err.OperationalError(errno, "message")
    return sa_exc.OperationalError("UPDATE ...", {}, original)


@pytest.mark.parametrize(
    ("errno", "sqlstate", "transient", "conflict", "refuses_writes"),
    [
        pytest.param(1213, "40001", True, True, False, id="deadlock-or-certification"),
        pytest.param(1213, None, True, True, False, id="deadlock-no-sqlstate"),
        pytest.param(1205, "HY000", True, True, False, id="lock-wait-timeout"),
        pytest.param(2013, "HY000", True, False, False, id="lost-connection"),
        pytest.param(1927, "70100", True, False, False, id="connection-killed"),
        pytest.param(1290, "HY000", True, False, True, id="read-only-option"),
        pytest.param(1836, "HY000", True, False, True, id="read-only-mode"),
        pytest.param(1792, "25006", True, False, True, id="read-only-transaction"),
        pytest.param(1047, "08S01", True, False, True, id="galera-node-not-ready"),
        pytest.param(1180, "HY000", True, False, False, id="error-during-commit"),
        pytest.param(3101, "40000", True, True, False, id="group-replication-certification"),
        pytest.param(3100, "HY000", True, True, False, id="group-replication-commit-hook"),
        pytest.param(2026, "HY000", False, False, False, id="ssl-handshake"),
        pytest.param(1146, "42S02", False, False, False, id="no-such-table"),
    ],
)
def test_mysql_errors_are_told_apart_by_number(
    errno: int, sqlstate: str | None, transient: bool, conflict: bool, refuses_writes: bool
) -> None:
    error = mysql_error(errno, sqlstate)
    assert (MYSQL.is_transient(error), MYSQL.is_conflict(error)) == (transient, conflict)
    assert error.orig is not None
    assert MYSQL.refuses_writes(error.orig) is refuses_writes


@pytest.mark.parametrize(
    ("sqlstate", "transient", "conflict"),
    [
        ("40P01", True, True),
        ("40001", True, True),
        ("55P03", True, True),
        ("08006", True, False),
        ("08001", True, False),
        ("57P01", True, False),
        ("57P02", True, False),
        ("57P03", True, False),
        ("25006", True, False),
        ("42P01", False, False),
    ],
)
def test_postgres_errors_are_told_apart_by_sqlstate(
    sqlstate: str, transient: bool, conflict: bool
) -> None:
    original = psycopg.errors.lookup(sqlstate)("message")
    error = sa_exc.OperationalError("UPDATE ...", {}, original)
    assert (POSTGRES.is_transient(error), POSTGRES.is_conflict(error)) == (transient, conflict)
    assert POSTGRES.refuses_writes(original) is (sqlstate == "25006"), "a standby's refusal"


def test_postgres_refusing_connections_is_transient() -> None:
    refused = psycopg.OperationalError("connection failed: Connection refused")
    error = sa_exc.OperationalError("connect", {}, refused)
    assert (POSTGRES.is_transient(error), POSTGRES.is_conflict(error)) == (True, False)


@pytest.mark.parametrize(
    ("message", "transient"),
    [
        ('connection to server at "db", port 5432 failed: Connection refused', True),
        ('connection to server at "db", port 5432 failed: timeout expired', True),
        ("failed: FATAL:  the database system is starting up", True),
        ("failed: FATAL:  sorry, too many clients already", True),
        ("failed: FATAL:  the database system is not yet accepting connections", True),
        ("failed: session is read-only", True),
        ('failed: FATAL:  password authentication failed for user "app"', False),
        ('failed: FATAL:  database "app" does not exist', False),
        ('failed: FATAL:  no pg_hba.conf entry for host "10.0.0.1"', False),
    ],
)
def test_postgres_connect_failures_are_transient_unless_the_server_refused(
    message: str, transient: bool
) -> None:
    error = sa_exc.OperationalError("connect", {}, psycopg.OperationalError(message))
    assert POSTGRES.is_transient(error) is transient


def test_sqlite_retries_a_busy_database_only() -> None:
    sqlite = SQLiteDialect()
    busy = sa_exc.OperationalError("UPDATE", {}, sqlite3.OperationalError("database is locked"))
    binding = sa_exc.InterfaceError("UPDATE", {}, sqlite3.InterfaceError("Error binding parameter"))
    assert (sqlite.is_transient(busy), sqlite.is_conflict(busy)) == (True, True)
    assert (sqlite.is_transient(binding), sqlite.is_conflict(binding)) == (False, False)


@pytest.mark.parametrize(
    ("attempt", "elapsed", "repeat"),
    [(1, 120.0, True), (2, 1.0, True), (2, 120.0, False), (5, 0.1, True), (6, 0.1, False)],
)
def test_conflicts_repeat_once_then_only_within_the_budget(
    attempt: int, elapsed: float, repeat: bool
) -> None:
    """A lock wait may itself last the server's timeout (50 s on MySQL): one repeat at most."""
    assert may_repeat(attempt, elapsed) is repeat
