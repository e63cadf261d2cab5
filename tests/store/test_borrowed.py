"""A job written through a DB-API connection its owner lends (``Store.borrow``) is in the owner's
transaction: invisible until the owner commits, gone if it rolls back, and rota's loan ends
nothing of the owner's (no COMMIT, ROLLBACK or close), on every backend.

This is what ``rota.contrib.django`` builds its transactional enqueue on; tests/django has the
same through Django's own connection.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from typing import Any

import psycopg
import pymysql
import pytest
from sqlalchemy.engine import make_url

from rota import ConfigError, Enqueue, JobNotFound, Rota
from rota.store.urls import database_file
from tests.conftest import Database


def raw_connection(db: Database) -> Any:
    """A plain DB-API connection of the store's own driver, in a transaction of its own."""
    url = make_url(db.url)
    if db.backend == "sqlite":
        path = database_file(db.url)
        assert path is not None
        connection = sqlite3.connect(path, isolation_level=None)
        connection.execute("BEGIN")
        return connection
    if db.backend == "mariadb":
        return pymysql.connect(
            host=url.host, port=url.port, user=url.username, database=url.database
        )
    return psycopg.connect(host=url.host, port=url.port, user=url.username, dbname=url.database)


@pytest.fixture
def owner(db: Database, rota: Rota) -> Iterator[Any]:
    rota.jobs()  # the schema exists before the owner's transaction starts
    connection = raw_connection(db)
    yield connection
    connection.close()


def seen(db: Database, *jobs: int) -> int:
    """How many of ``jobs`` a connection of its own sees.

    Not through ``rota``: on SQLite every transaction of rota's takes the write lock first,
    and the owner holds it until it commits."""
    connection = raw_connection(db)
    try:
        cursor = connection.cursor()
        ids = ", ".join(str(int(job)) for job in jobs)
        cursor.execute(f"SELECT COUNT(*) FROM {db.table('jobs')} WHERE id IN ({ids})")
        return int(cursor.fetchone()[0])
    finally:
        connection.close()


def test_the_job_exists_only_once_the_owner_commits(db: Database, rota: Rota, owner: Any) -> None:
    @rota.task
    def send(ctx: object, to: str) -> None: ...

    with rota.store.borrow(owner) as connection:
        first = rota.queue(send, "a@example.com", connection=connection)
    with rota.store.borrow(owner) as connection:  # a second loan in the same transaction
        second, third = rota.queue_many(
            [Enqueue(send, "b@example.com", unique_key="b"), Enqueue(send, "c@example.com")],
            connection=connection,
        )
    assert seen(db, first, second, third) == 0  # nor does any other connection, rota's included
    owner.commit()
    assert [rota.job(job).args for job in (first, second, third)] == [
        ("a@example.com",),
        ("b@example.com",),
        ("c@example.com",),
    ]


def test_a_loan_ends_nothing_of_the_owners(db: Database, rota: Rota, owner: Any) -> None:
    """After the loan the owner's transaction is still open: its rollback undoes the job."""

    @rota.task
    def send(ctx: object) -> None: ...

    with rota.store.borrow(owner) as connection:
        job = rota.queue(send, connection=connection)
    cursor = owner.cursor()
    cursor.execute(f"SELECT COUNT(*) FROM {db.table('jobs')} WHERE id = {int(job)}")
    assert cursor.fetchone()[0] == 1  # written, and the owner's connection still works
    cursor.close()
    owner.rollback()
    assert seen(db, job) == 0
    with pytest.raises(JobNotFound):
        rota.job(job)


class Stranger:
    """A DB-API connection of a driver no store uses."""

    __module__ = "otherdriver.connections"


def test_a_connection_of_another_driver_is_refused(rota: Rota) -> None:
    @rota.task
    def send(ctx: object) -> None: ...

    with pytest.raises(ConfigError, match="otherdriver"), rota.store.borrow(Stranger()) as conn:
        rota.queue(send, connection=conn)
