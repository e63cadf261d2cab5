"""A ``mariadb://`` URL makes the tables a ``mysql://`` URL makes, whatever the driver.

SQLAlchemy's MariaDB dialect reads only ``mariadb_``-prefixed table options, its MySQL dialect
only ``mysql_`` ones: with the ``mysql_`` options alone, a ``mariadb://`` URL created every table
in the server's default collation (``utf8mb4_general_ci`` on MariaDB 10.11), whose unique keys
fold case, and ``rota migrate --sql`` printed neither ENGINE nor COLLATE.
"""

from __future__ import annotations

import uuid

import pytest
from click.testing import CliRunner
from sqlalchemy import text
from sqlalchemy.engine import make_url

from rota.cli import main
from rota.store import open_store
from rota.store.schema import build_schema
from tests.conftest import Database, drop_prefixed_tables, server_url

URLS = [
    "mysql+pymysql",
    "mariadb+pymysql",
    "mysql+mysqldb",
    "mariadb+mysqldb",
]
OFFLINE_URLS = ["mysql", "mariadb", *URLS, "mariadb+mariadbconnector"]
TABLES = """
    SELECT table_name, engine, table_collation FROM information_schema.tables
    WHERE table_schema = DATABASE() AND table_name LIKE :prefix
"""
TEXT_COLUMNS = """
    SELECT table_name, column_name, character_set_name, collation_name
    FROM information_schema.columns
    WHERE table_schema = DATABASE() AND table_name LIKE :prefix
    AND character_set_name IS NOT NULL
"""

Layout = tuple[dict[str, tuple[str, str]], dict[tuple[str, str], tuple[str, str]]]


def layout(db: Database, drivername: str, prefix: str) -> Layout:
    """Migrate ``prefix``'s tables through ``drivername``; each table's engine and collation,
    and each text column's character set and collation, by name without the prefix."""
    url = make_url(db.url).set(drivername=drivername).render_as_string(hide_password=False)
    store = open_store(url, prefix)
    try:
        store.migrate()
    finally:
        store.dispose()
    engine = db.engine()
    like = {"prefix": f"{prefix}%"}
    try:
        with engine.connect() as connection:
            tables = list(connection.execute(text(TABLES), like))
            columns = list(connection.execute(text(TEXT_COLUMNS), like))
    finally:
        engine.dispose()
    return (
        {name.removeprefix(prefix): (kind, collation) for name, kind, collation in tables},
        {
            (name.removeprefix(prefix), column): (charset, collation)
            for name, column, charset, collation in columns
        },
    )


@pytest.fixture(scope="module")
def mysql_layout() -> Layout:
    """What a ``mysql://`` URL (PyMySQL) makes: the tables to compare against."""
    db = Database("mariadb", server_url("mariadb"), f"t{uuid.uuid4().hex[:10]}_")
    try:
        return layout(db, "mysql+pymysql", db.prefix)
    finally:
        drop_prefixed_tables(db.url, db.prefix)


@pytest.mark.parametrize("drivername", URLS)
def test_every_table_and_text_column_is_innodb_utf8mb4_bin(
    mariadb: Database, drivername: str, mysql_layout: Layout
) -> None:
    pytest.importorskip("MySQLdb" if drivername.endswith("mysqldb") else "pymysql")
    tables, columns = layout(mariadb, drivername, mariadb.prefix)
    assert (tables, columns) == mysql_layout
    ours = {name.removeprefix("rota_") for name in build_schema().metadata.tables}
    assert ours < set(tables)
    texts = [key for key in columns if key[0] in ours]
    assert ("jobs", "task") in texts and ("schedules", "payload") in texts
    for name in ours:
        assert tables[name] == ("InnoDB", "utf8mb4_bin"), name
    for key in texts:
        assert columns[key] == ("utf8mb4", "utf8mb4_bin"), key


@pytest.mark.parametrize("drivername", OFFLINE_URLS)
def test_migrate_sql_prints_the_table_options_for_every_driver(drivername: str) -> None:
    result = CliRunner().invoke(main, ["migrate", "--sql", "--url", f"{drivername}://u@h/db"])
    assert result.exit_code == 0, result.output
    tables = build_schema().metadata.tables
    options = ")ENGINE=InnoDB CHARSET=utf8mb4 COLLATE utf8mb4_bin;"
    created = result.output.count("CREATE TABLE ")
    assert created > len(tables), "0011 rebuilds four tables"
    assert result.output.count(options) == created - 1, "every table but Alembic's"
