"""The store tests' MariaDB sessions run in MySQL 8's default ``sql_mode`` (``conftest``)."""

from __future__ import annotations

import pytest
from sqlalchemy import text

from rota.store import open_store
from tests.conftest import Database
from tests.helpers import MYSQL8_SQL_MODE, through


@pytest.mark.parametrize("driver", [None, "mysqldb"])
def test_rotas_own_sessions_run_in_mysql_8s_sql_mode(mariadb: Database, driver: str | None) -> None:
    pytest.importorskip("MySQLdb" if driver else "pymysql")
    store = open_store(through(mariadb.url, driver), mariadb.prefix)
    try:
        with store.engine.connect() as connection:
            mode = connection.execute(text("SELECT @@SESSION.sql_mode")).scalar_one()
    finally:
        store.dispose()
    assert set(mode.split(",")) == set(MYSQL8_SQL_MODE.split(","))
