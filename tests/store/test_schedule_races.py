"""Two processes creating one schedule at once: one creates it, and its history says so once.

Both find no row (a ``SELECT ... FOR UPDATE`` of a missing row locks nothing under READ
COMMITTED) and both insert; the unique name makes the second wait for the first's commit. On
MySQL an ``INSERT ... ON DUPLICATE KEY UPDATE`` that then changed nothing still reported one
row: SQLAlchemy's MySQL dialects connect with ``CLIENT_FOUND_ROWS``, which counts a row matched
as affected, so the loser recorded a second ``created`` entry.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import pytest
from sqlalchemy import event

from rota.core.schedules import Schedule, ScheduleAction, ScheduleSource, ScheduleSpec
from rota.store import SqlStore, open_store
from tests.conftest import START, Database

BARRIER_TIMEOUT = 20.0


@pytest.fixture
def stores(db: Database) -> Iterator[list[SqlStore]]:
    """Two stores on the test's tables, each with its own connections, as two processes."""
    opened = [open_store(db.url, db.prefix) for _ in range(2)]
    opened[0].migrate()
    yield opened
    for store in opened:
        store.dispose()


def test_two_racing_upserts_record_one_creation(db: Database, stores: list[SqlStore]) -> None:
    spec = ScheduleSpec("nightly", "t", "0 3 * * *", "UTC", "{}", "default", 0, ScheduleSource.CODE)
    # SQLite has one writer: the second upsert starts once the first committed, and finds it.
    racing = db.backend != "sqlite"
    both_inserting = threading.Barrier(2 if racing else 1, timeout=BARRIER_TIMEOUT)
    inserts: list[str] = []
    table = stores[0].schema.schedules.name

    def at_insert(connection: Any, cursor: Any, statement: str, *_: object) -> None:
        if statement.startswith(f"INSERT INTO {table} "):
            inserts.append(statement)
            both_inserting.wait()

    results: list[Schedule] = []
    errors: list[BaseException] = []

    def create(store: SqlStore) -> None:
        try:
            schedule, _ = store.schedules.upsert(spec, START, START, "code")
            assert schedule is not None
            results.append(schedule)
        except BaseException as error:
            errors.append(error)
            both_inserting.abort()

    for store in stores:
        event.listen(store.engine, "before_cursor_execute", at_insert)
    threads = [threading.Thread(target=create, args=(store,)) for store in stores]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert len(inserts) == (2 if racing else 1), "both found no row and inserted"
    assert results[0] == results[1]
    history = stores[0].schedules.history_of("nightly")
    assert [change.action for change in history] == [ScheduleAction.CREATED]
