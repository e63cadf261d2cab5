"""Which driver errors rota repeats, for PyMySQL with and without a SQLSTATE, and psycopg.

PyMySQL 1.2 started to carry the server's SQLSTATE, which for a deadlock (``40001``) says
nothing about the error number that tells it apart; the number must decide.
"""

from __future__ import annotations

import psycopg
import pymysql
import pytest
from sqlalchemy import exc as sa_exc

from rota.store.dialects import Dialect

MYSQL = Dialect("mysql", returning=False, skip_locked=True)
POSTGRES = Dialect("postgresql", returning=True, skip_locked=True)


def mysql_error(errno: int, sqlstate: str | None) -> sa_exc.DBAPIError:
    try:
        original = pymysql.err.OperationalError(errno, "message", sqlstate=sqlstate)
    except TypeError:  # PyMySQL before 1.2 takes no SQLSTATE
        original = pymysql.err.OperationalError(errno, "message")
    return sa_exc.OperationalError("UPDATE ...", {}, original)


@pytest.mark.parametrize(
    ("errno", "sqlstate", "transient", "conflict"),
    [
        (1213, "40001", True, True),
        (1213, None, True, True),
        (1205, "HY000", True, True),
        (2013, "HY000", True, False),
        (1927, "70100", True, False),
        (1146, "42S02", False, False),
    ],
)
def test_mysql_errors_are_told_apart_by_number(
    errno: int, sqlstate: str | None, transient: bool, conflict: bool
) -> None:
    error = mysql_error(errno, sqlstate)
    assert (MYSQL.is_transient(error), MYSQL.is_conflict(error)) == (transient, conflict)


@pytest.mark.parametrize(
    ("sqlstate", "transient", "conflict"),
    [
        ("40P01", True, True),
        ("40001", True, True),
        ("55P03", True, True),
        ("08006", True, False),
        ("57P01", True, False),
        ("42P01", False, False),
    ],
)
def test_postgres_errors_are_told_apart_by_sqlstate(
    sqlstate: str, transient: bool, conflict: bool
) -> None:
    original = psycopg.errors.lookup(sqlstate)("message")
    error = sa_exc.OperationalError("UPDATE ...", {}, original)
    assert (POSTGRES.is_transient(error), POSTGRES.is_conflict(error)) == (transient, conflict)


def test_postgres_refusing_connections_is_transient() -> None:
    refused = psycopg.OperationalError("connection failed: Connection refused")
    error = sa_exc.OperationalError("connect", {}, refused)
    assert (POSTGRES.is_transient(error), POSTGRES.is_conflict(error)) == (True, False)
