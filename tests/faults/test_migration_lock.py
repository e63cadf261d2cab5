"""The migration lock belongs to one database and table prefix, and a timeout is an error.

On MariaDB (``GET_LOCK``) and PostgreSQL (an advisory lock), another session holds the lock
of one prefix: ``rota migrate`` of that prefix fails after its ``--lock-timeout`` with a
``STORE_ERROR`` naming the lock, and migrates nothing; a second prefix migrates meanwhile, its
lock being another one. The timeout is also run through mysqlclient (``rota migrate`` on a
``mysql+mysqldb://`` URL).
"""

from __future__ import annotations

import contextlib
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator

import pytest
from sqlalchemy import inspect, text
from sqlalchemy.engine import make_url

from rota.store.dialects.base import migration_lock_name
from tests.conftest import Database, drop_prefixed_tables
from tests.faults.conftest import EVERY_SERVER, on_driver
from tests.workers import ROOT, ROTA_COMMAND

pytestmark = pytest.mark.slow

LOCK_TIMEOUT = 1.5
MIGRATE_TIMEOUT = 60.0


def lock_name(db: Database, prefix: str) -> str:
    return migration_lock_name(make_url(db.url).database, prefix)


@contextlib.contextmanager
def holding(db: Database, prefix: str) -> Iterator[None]:
    """Another session holds the migration lock of ``prefix`` for the ``with`` block."""
    engine = db.engine()
    name = lock_name(db, prefix)
    mysql = db.backend == "mariadb"
    take = "SELECT GET_LOCK(:n, 0)" if mysql else "SELECT pg_try_advisory_lock(hashtext(:n))"
    free = "SELECT RELEASE_LOCK(:n)" if mysql else "SELECT pg_advisory_unlock(hashtext(:n))"
    with engine.connect() as connection:
        assert connection.execute(text(take), {"n": name}).scalar() in (1, True)
        try:
            yield
        finally:
            connection.execute(text(free), {"n": name})
    engine.dispose()


def migrate(db: Database, prefix: str) -> tuple[subprocess.CompletedProcess[str], float]:
    started = time.monotonic()
    command = [sys.executable, *ROTA_COMMAND, "migrate", "--url", db.url]
    options = ["--table-prefix", prefix, "--lock-timeout", str(LOCK_TIMEOUT)]
    done = subprocess.run(
        [*command, *options],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=MIGRATE_TIMEOUT,
    )
    return done, time.monotonic() - started


def tables(db: Database, prefix: str) -> list[str]:
    engine = db.engine()
    try:
        return [name for name in inspect(engine).get_table_names() if name.startswith(prefix)]
    finally:
        engine.dispose()


@pytest.mark.parametrize("server_db", EVERY_SERVER, indirect=True)
def test_a_held_migration_lock_times_out_as_a_store_error_naming_it(
    server_db: Database, mysql_driver: str | None
) -> None:
    server_db = on_driver(server_db, mysql_driver)
    with holding(server_db, server_db.prefix):
        done, took = migrate(server_db, server_db.prefix)
    assert done.returncode == 1, done
    assert "STORE_ERROR" in done.stderr
    assert repr(lock_name(server_db, server_db.prefix)) in done.stderr, done.stderr
    assert LOCK_TIMEOUT <= took < LOCK_TIMEOUT + 15, took
    assert tables(server_db, server_db.prefix) == [], "nothing migrated without the lock"


def test_another_prefix_migrates_while_one_prefix_is_locked(server_db: Database) -> None:
    other = f"t{uuid.uuid4().hex[:10]}_"
    try:
        with holding(server_db, server_db.prefix):
            done, took = migrate(server_db, other)
        assert done.returncode == 0, done.stderr
        assert "applied" in done.stdout
        assert took < MIGRATE_TIMEOUT
        assert f"{other}jobs" in tables(server_db, other)
    finally:
        drop_prefixed_tables(server_db.url, other)
