"""The store tests run on MariaDB in MySQL 8's default ``sql_mode``: they send every statement
the store has, and MySQL 8 is stricter than MariaDB's default (``ONLY_FULL_GROUP_BY``,
``NO_ZERO_DATE``, ``NO_ZERO_IN_DATE``). Each session sets it as it connects
(``tests.helpers.in_mysql8_mode``), never ``SET GLOBAL``, which would change it for every
other test on the server; the rest of the suite keeps MariaDB's default. What they send is also
compiled again for MySQL 8 and checked (``mysql8_statements``)."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator

import pytest

from tests.conftest import Database
from tests.helpers import in_mysql8_mode
from tests.store.mysql8 import recording


def _mysql8_mode(db: Database) -> Database:
    return dataclasses.replace(db, url=in_mysql8_mode(db.url))


@pytest.fixture
def db(db: Database) -> Database:
    return _mysql8_mode(db)


@pytest.fixture
def server_db(server_db: Database) -> Database:
    return _mysql8_mode(server_db)


@pytest.fixture
def mariadb(mariadb: Database) -> Database:
    return _mysql8_mode(mariadb)


@pytest.fixture(autouse=True)
def mysql8_statements() -> Iterator[None]:
    """Every statement a store test sends to MariaDB, compiled again for MySQL 8.0.19, 8.0.36
    and 8.4, must be one MySQL takes (``tests.store.mysql8``)."""
    with recording() as recorded:
        yield
    assert recorded.problems() == []
