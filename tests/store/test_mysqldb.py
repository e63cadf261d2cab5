"""rota on mysqlclient (``mysql+mysqldb://``), the driver of Django's MySQL backend.

Its ``connect()`` takes whole seconds only, and its ``executemany`` splits an INSERT past 64 KiB,
where ``LAST_INSERT_ID()`` would then name the first id of the last part only: both are the
dialect's business (``dialects/mysql.py``). The fault tests where the driver matters run on
mysqlclient too (tests/faults/conftest.py).
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from sqlalchemy import exc as sa_exc

from rota import Enqueue, JobContext, Rota
from rota.store.dialects import MySQLDialect
from tests.conftest import Database
from tests.helpers import sql_store, through

MySQLdb = pytest.importorskip("MySQLdb")


@pytest.fixture
def mysqldb_rota(mariadb: Database) -> Iterator[Rota]:
    rota = Rota(
        through(mariadb.url, "mysqldb"),
        table_prefix=mariadb.prefix,
        read_timeout=2.5,
        connect_timeout=5,
    )
    yield rota
    sql_store(rota).engine.dispose()


def test_a_batch_larger_than_one_statement_gets_its_own_ids(mysqldb_rota: Rota) -> None:
    @mysqldb_rota.task
    def number(ctx: JobContext, n: int, padding: str) -> int:
        return n

    ids = mysqldb_rota.queue_many(Enqueue(number, n, "x" * 1000) for n in range(150))
    assert [mysqldb_rota.job(job).args[0] for job in ids] == list(range(150))
    assert mysqldb_rota.store.driver()[0] == "mysqldb"
    assert mysqldb_rota.drain().succeeded == 150
    assert mysqldb_rota.result(ids[-1]) == 149


@pytest.mark.parametrize(
    ("errno", "transient"),
    [(2002, True), (2005, True), (2013, True), (1045, False)],
)
def test_mysqlclient_not_reaching_the_server_is_transient(errno: int, transient: bool) -> None:
    """Its C library reports a refused connection as 2002 and an unknown host as 2005 (PyMySQL:
    2003 for both); a wrong password (1045) stays permanent."""
    original = MySQLdb.OperationalError(errno, "message")
    error = sa_exc.OperationalError("connect", {}, original)
    assert MySQLDialect().is_transient(error) is transient
