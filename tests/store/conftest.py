"""The store tests run on MariaDB in MySQL 8's default ``sql_mode``: they send every statement
the store has, and MySQL 8 is stricter than MariaDB's default (``ONLY_FULL_GROUP_BY``,
``NO_ZERO_DATE``, ``NO_ZERO_IN_DATE``). Each session sets it as it connects
(``tests.helpers.in_mysql8_mode``), never ``SET GLOBAL``, which would change it for every
other test on the server; the rest of the suite keeps MariaDB's default."""

from __future__ import annotations

import dataclasses

import pytest

from tests.conftest import Database
from tests.helpers import in_mysql8_mode


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
