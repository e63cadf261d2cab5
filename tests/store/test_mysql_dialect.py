"""What only MySQL takes from rota, tested without a server: ``FakeConnection`` answers the
dialect's statements as a MySQL 8, MariaDB or Aurora server would.

The server's version and product, read-only servers (MySQL's ``super_read_only``, a Galera node
not ready), ``GET_LOCK`` in whole seconds, ids of a multi-row insert on a server whose ids step
by more than one, the drivers' sockets and connect parameters. Group Replication's errors are
with the others in ``test_error_classes``.
"""

from __future__ import annotations

import socket
from collections.abc import Callable, Sequence
from types import SimpleNamespace
from typing import Any, cast

import pytest
from sqlalchemy import Column, Integer, MetaData, String, Table
from sqlalchemy.dialects.mysql import mysqldb, pymysql
from sqlalchemy.engine import Connection, make_url

from rota.store.dialects import MySQLDialect
from rota.store.dialects.base import LOCK_NAME_LIMIT, migration_lock_name
from rota.store.dialects.mysql import Release, _driver_socket, server_release
from rota.store.dialects.pooling import transaction_open

MYSQL = MySQLDialect()
NO_ROWS: list[tuple[Any, ...]] = []


class FakeResult:
    def __init__(self, rows: Sequence[tuple[Any, ...]] = (), lastrowid: int = 0) -> None:
        self.rows = list(rows)
        self.lastrowid = lastrowid

    def __iter__(self) -> Any:
        return iter(self.rows)

    def first(self) -> tuple[Any, ...] | None:
        return self.rows[0] if self.rows else None

    def scalar(self) -> Any:
        return self.rows[0][0] if self.rows else None

    def scalar_one(self) -> Any:
        (row,) = self.rows
        return row[0]


class FakeConnection:
    """SQLAlchemy's ``Connection`` as far as the dialect uses it: ``answer`` gives the result
    of each statement (its SQL and parameters); ``sent`` keeps them in order."""

    def __init__(
        self,
        answer: Callable[[str, Any], FakeResult],
        url: str = "mysql+pymysql://app@db.example:3307/app",
        driver: str = "pymysql",
    ) -> None:
        self.answer = answer
        self.engine = SimpleNamespace(url=make_url(url))
        self.dialect = (mysqldb if driver == "mysqldb" else pymysql).dialect()
        self.sent: list[tuple[str, Any]] = []

    def exec_driver_sql(self, sql: str, parameters: Any = None) -> FakeResult:
        return self.execute(sql, parameters)

    def execute(self, statement: object, parameters: Any = None) -> FakeResult:
        self.sent.append((str(statement), parameters))
        return self.answer(str(statement), parameters)

    def connection(self) -> Connection:
        return cast(Connection, self)


def server(variables: dict[str, str], wsrep_ready: str = "ON") -> FakeConnection:
    """A server with these global variables beside a writable primary's."""
    every = {"read_only": "OFF", "hostname": "mysql-1", "port": "3306", **variables}

    def answer(sql: str, parameters: Any) -> FakeResult:
        if sql.startswith("SHOW GLOBAL VARIABLES"):
            return FakeResult(list(every.items()))
        assert sql == "SHOW GLOBAL STATUS LIKE 'wsrep_ready'", sql
        return FakeResult([("wsrep_ready", wsrep_ready)])

    return FakeConnection(answer)


@pytest.mark.parametrize(
    ("version", "aurora", "release"),
    [
        ("8.0.36", None, Release("MySQL", (8, 0, 36), "8.0.36")),
        ("8.4.3-log", None, Release("MySQL", (8, 4, 3), "8.4.3")),
        ("9.1.0", None, Release("MySQL", (9, 1, 0), "9.1.0")),
        ("8.0.36-28", None, Release("MySQL", (8, 0, 36), "8.0.36")),
        ("10.11.19-MariaDB-0+deb12u1", None, Release("MariaDB", (10, 11, 19), "10.11.19")),
        ("5.5.5-10.11.6-MariaDB-log", None, Release("MariaDB", (10, 11, 6), "10.11.6")),
        ("11.4.2-MariaDB", None, Release("MariaDB", (11, 4, 2), "11.4.2")),
        ("8.0.32", "3.05.2", Release("MySQL", (8, 0, 32), "8.0.32 (Aurora MySQL 3.05.2)")),
        (
            "8.0.mysql_aurora.3.05.2",
            None,
            Release("MySQL", (8, 0, 23), "8.0 (Aurora MySQL 3.05.2)"),
        ),
        ("5.7.mysql_aurora.2.11.2", None, Release("MySQL", (5, 7), "5.7 (Aurora MySQL 2.11.2)")),
        ("unknown", None, Release("MySQL", (), "'unknown'")),
    ],
)
def test_the_version_is_read_from_every_form_a_server_gives(
    version: str, aurora: str | None, release: Release
) -> None:
    assert server_release(version, aurora) == release


@pytest.mark.parametrize(
    ("version", "described", "problem"),
    [
        ("8.0.36", "MySQL 8.0.36", None),
        ("8.4.3", "MySQL 8.4.3", None),
        ("8.0.0-dmr", "MySQL 8.0.0", "MySQL 8.0.0 has no SKIP LOCKED; rota needs 8.0.1 or later"),
        (
            "5.7.44-log",
            "MySQL 5.7.44",
            "MySQL 5.7.44 has no SKIP LOCKED; rota needs 8.0.1 or later",
        ),
        ("10.6.0-MariaDB", "MariaDB 10.6.0", None),
        (
            "10.5.27-MariaDB",
            "MariaDB 10.5.27",
            "MariaDB 10.5.27 has no SKIP LOCKED; rota needs 10.6",
        ),
        ("8.0.mysql_aurora.3.05.2", "MySQL 8.0 (Aurora MySQL 3.05.2)", None),
        ("5.7.mysql_aurora.2.11.2", "MySQL 5.7 (Aurora MySQL 2.11.2)", "has no SKIP LOCKED"),
        ("unknown", "MySQL 'unknown'", "cannot tell the version of MySQL 'unknown'"),
    ],
)
def test_a_server_without_skip_locked_is_described_with_the_reason(
    version: str, described: str, problem: str | None
) -> None:
    info = MYSQL.describe_server(server({"version": version}).connection())
    assert str(info) == described
    assert info.skip_locked == ("yes" if problem is None else "no")
    if problem is None:
        assert info.problem is None
    else:
        assert info.problem is not None and problem in info.problem


@pytest.mark.parametrize(
    ("variables", "wsrep_ready", "read_only"),
    [
        ({}, "ON", None),
        ({"super_read_only": "ON", "read_only": "ON"}, "ON", "super_read_only is on"),
        ({"read_only": "ON"}, "ON", "read_only is on"),
        ({"innodb_read_only": "ON"}, "ON", "innodb_read_only is on"),
        ({"wsrep_on": "ON"}, "OFF", "wsrep_ready is OFF: this Galera node is not in the primary"),
        ({"wsrep_on": "ON"}, "ON", None),
    ],
)
def test_a_server_that_takes_no_writes_says_why(
    variables: dict[str, str], wsrep_ready: str, read_only: str | None
) -> None:
    connection = server({"version": "8.0.36", **variables}, wsrep_ready)
    info = MYSQL.describe_server(connection.connection())
    assert info.reached == "db.example:3307 (node mysql-1:3306)"
    if read_only is None:
        assert info.read_only is None
    else:
        assert info.read_only is not None and info.read_only.startswith(read_only)
    asked = 2 if "wsrep_on" in variables else 1
    assert len(connection.sent) == asked, "one round trip, and Galera's readiness"


def lock_server(taken_at_try: int | None) -> FakeConnection:
    """``GET_LOCK`` answering at once: 0 (not taken) but at try ``taken_at_try``."""
    tries: list[int] = []

    def answer(sql: str, parameters: Any) -> FakeResult:
        assert sql == "SELECT GET_LOCK(:name, :wait)"
        tries.append(parameters["wait"])
        return FakeResult([(int(len(tries) == taken_at_try),)])

    return FakeConnection(answer)


@pytest.mark.parametrize(("timeout", "tries"), [(0.0, 1), (0.3, 1), (1.0, 1), (2.5, 3), (120, 120)])
def test_get_lock_waits_whole_seconds_in_a_bounded_number_of_tries(
    timeout: float, tries: int
) -> None:
    """MySQL reads ``GET_LOCK``'s timeout as whole seconds: a try of 0.3 s would return at once,
    and a loop timed by the clock would then spin until its deadline."""
    connection = lock_server(taken_at_try=None)
    assert MYSQL.take_lock(connection.connection(), "rota_migrate:app:rota_", timeout) is False
    assert [parameters["wait"] for _, parameters in connection.sent] == [1] * tries


def test_get_lock_stops_trying_once_taken() -> None:
    connection = lock_server(taken_at_try=2)
    assert MYSQL.take_lock(connection.connection(), "rota_migrate:app:rota_", 60) is True
    assert len(connection.sent) == 2


def test_a_long_lock_name_is_a_digest_mysql_takes() -> None:
    name = migration_lock_name("a_database_named_at_length_" * 2, "rota_")
    assert len(name) <= LOCK_NAME_LIMIT and name.startswith("rota_migrate:")
    assert name != migration_lock_name("a_database_named_at_length_" * 2, "other_")


TABLE = Table("t", MetaData(), Column("id", Integer, primary_key=True), Column("v", String(10)))


def id_server(step: int, first: int, driver: str = "pymysql") -> FakeConnection:
    """A server handing out ids ``step`` apart (Galera: one step per node), the next multi-row
    insert's first id being ``first`` (then the next chunk's ``first + 1000``...)."""
    inserts: list[int] = []

    def answer(sql: str, parameters: Any) -> FakeResult:
        if sql == "SELECT @@auto_increment_increment":
            return FakeResult([(step,)])
        if sql == "SELECT LAST_INSERT_ID()":
            return FakeResult([(first + 1000 * (len(inserts) - 1),)])
        assert sql.startswith("INSERT INTO t"), sql
        inserts.append(len(parameters) if isinstance(parameters, list) else 1)
        return FakeResult(NO_ROWS, lastrowid=first)

    return FakeConnection(answer, driver=driver)


def test_ids_of_a_multi_row_insert_step_as_the_server_does() -> None:
    connection = id_server(step=3, first=7)
    rows = [{"v": "x"} for _ in range(4)]
    assert MYSQL.insert_ids(connection.connection(), TABLE, rows) == [7, 10, 13, 16]
    assert MYSQL.insert_ids(connection.connection(), TABLE, rows[:1]) == [7]


@pytest.mark.parametrize("paramstyle", ["pyformat", "qmark"])
def test_a_bulk_insert_is_one_statement_in_the_drivers_placeholder_style(paramstyle: str) -> None:
    """With ``%s`` placeholders (PyMySQL, mysqlclient) the rows go as one multi-row INSERT
    with their values in order; a driver of another style gets SQLAlchemy's insert."""
    connection = id_server(step=1, first=5)
    connection.dialect.paramstyle = paramstyle
    rows = [{"v": f"x{n}"} for n in range(3)]
    assert MYSQL.insert_ids(connection.connection(), TABLE, rows) == [5, 6, 7]
    ((sql, sent),) = [(sql, p) for sql, p in connection.sent if sql.startswith("INSERT")]
    if paramstyle == "pyformat":
        assert sql.endswith("VALUES (%s), (%s), (%s)") and sent == ("x0", "x1", "x2")
    else:
        assert sent == rows


def test_mysqlclient_inserts_in_chunks_it_does_not_split_itself() -> None:
    """mysqlclient splits an ``executemany`` past 64 KiB: each chunk stays below, and gets its
    ids from its own ``LAST_INSERT_ID()``."""
    connection = id_server(step=1, first=1, driver="mysqldb")
    rows = [{"v": "x" * 2000} for _ in range(10)]
    ids = MYSQL.insert_ids(connection.connection(), TABLE, rows)
    chunks = [len(parameters) for sql, parameters in connection.sent if sql.startswith("INSERT")]
    assert len(chunks) > 1 and sum(chunks) == 10
    assert ids[: chunks[0]] == list(range(1, chunks[0] + 1))
    assert ids[chunks[0]] == 1001


def test_the_socket_is_pymysqls_or_a_duplicate_of_mysqlclients() -> None:
    ours, theirs = socket.socketpair()
    with ours, theirs:
        with _driver_socket(SimpleNamespace(_sock=ours)) as sock:
            assert sock is ours
        with _driver_socket(SimpleNamespace(fileno=ours.fileno)) as sock:
            assert sock is not None and sock.fileno() != ours.fileno()
            sock.sendall(b"x")
        assert theirs.recv(1) == b"x"
        ours.sendall(b"y")  # closing the duplicate left the driver's socket open
        assert theirs.recv(1) == b"y"
        with _driver_socket(object()) as sock:
            assert sock is None


def test_connect_parameters_as_each_driver_takes_them() -> None:
    """mysqlclient takes whole seconds (rounded up); PyMySQL a password as the UTF-8 bytes the
    ``mysql`` client sends (a string it would encode as Latin-1)."""
    timeouts = {"connect_timeout": 2.5, "read_timeout": 60, "write_timeout": 0.2}
    rounded = MYSQL.connect_params("mysqldb", {**timeouts, "password": "pässword"})
    assert rounded == {"connect_timeout": 3, "read_timeout": 60, "write_timeout": 1} | {
        "password": "pässword"
    }
    utf8 = MYSQL.connect_params("pymysql", {"password": "pässword"})
    assert utf8 == {"password": "pässword".encode()}
    assert MYSQL.connect_params("pymysql", {"user": "app"}) == {"user": "app"}


@pytest.mark.parametrize(("status", "open_"), [(0x0003, True), (0x0002, False), (None, True)])
def test_a_pymysql_connection_says_whether_a_transaction_is_open(
    status: int | None, open_: bool
) -> None:
    """PyMySQL's ``server_status`` after COMMIT lacks ``SERVER_STATUS_IN_TRANS`` (1); mysqlclient
    shows nothing, so it may hold one."""
    connection = SimpleNamespace(server_status=status) if status is not None else object()
    assert transaction_open(connection) is open_
