"""The fault tests where the MySQL driver matters run on MariaDB through mysqlclient as well.

``MYSQLDB`` is a backend parameter whose value stays ``"mariadb"``, so that ``--backends``
deselects it with the other MariaDB tests; its id is what chooses mysqlclient
(``mysql+mysqldb://``, Django's MySQL driver) over PyMySQL. (A mark of its own would have to be
registered before this module is imported, which pyproject.toml would have to do.)
"""

from __future__ import annotations

import dataclasses

import pytest

from tests.conftest import Database
from tests.helpers import through

MYSQLDB_ID = "mariadb-mysqldb"
MYSQLDB = pytest.param("mariadb", id=MYSQLDB_ID)
BOTH_DRIVERS = ["mariadb", MYSQLDB]
EVERY_SERVER = ["mariadb", MYSQLDB, "postgres"]


@pytest.fixture
def mysql_driver(request: pytest.FixtureRequest) -> str | None:
    """``"mysqldb"`` for a test given ``MYSQLDB``; else ``None``, rota's default (PyMySQL)."""
    callspec = getattr(request.node, "callspec", None)
    return "mysqldb" if callspec is not None and MYSQLDB_ID in callspec.id else None


@pytest.fixture(params=BOTH_DRIVERS)
def mariadb_drivers(mariadb: Database, mysql_driver: str | None) -> Database:
    """MariaDB through PyMySQL, then through mysqlclient."""
    return on_driver(mariadb, mysql_driver)


def on_driver(db: Database, driver: str | None) -> Database:
    return dataclasses.replace(db, url=through(db.url, driver))
