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
from datetime import datetime, timedelta
from typing import Any

import pytest
from sqlalchemy import event

from rota.core.model import NewJob
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


def test_two_instances_firing_at_once_take_disjoint_batches(
    db: Database, stores: list[SqlStore]
) -> None:
    """Both hold their batch's rows at the same time (the planners meet at a barrier inside
    their transactions): neither waits for the other, and every due schedule fires once."""
    names = [f"s{n:02d}" for n in range(20)]
    for name in names:
        spec = ScheduleSpec(name, "t", "* * * * *", "UTC", "{}", "default", 0, ScheduleSource.CODE)
        stores[0].schedules.upsert(spec, START, START, "code")
    # SQLite has one writer: the second batch starts once the first committed, and skips it.
    racing = db.backend != "sqlite"
    both_holding = threading.Barrier(2 if racing else 1, timeout=BARRIER_TIMEOUT)
    taken: list[list[str]] = [[], []]
    errors: list[BaseException] = []

    def fire(index: int) -> None:
        def planner(schedule: Schedule) -> tuple[datetime, list[NewJob]]:
            if not taken[index]:
                both_holding.wait()
            taken[index].append(schedule.name)
            job = NewJob(
                task="t", payload="{}", run_at=START, schedule=schedule.name, scheduled_at=START
            )
            return START + timedelta(minutes=1), [job]

        try:
            stores[index].schedules.fire_due(START, 10, planner)
        except BaseException as error:
            errors.append(error)
            both_holding.abort()

    threads = [threading.Thread(target=fire, args=(index,)) for index in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert sorted(taken[0] + taken[1]) == names, "disjoint, and all of them"
    assert len(taken[0]) == len(taken[1]) == 10
    jobs = stores[0].reads.jobs()
    assert sorted(job.schedule or "" for job in jobs) == names


def test_two_instances_syncing_the_same_code_schedules_create_each_once(
    db: Database, stores: list[SqlStore]
) -> None:
    """Two processes starting at once with 30 code schedules: both insert them in one
    statement, the second finds them created meanwhile and creates none, and each schedule
    has one ``created`` entry."""
    specs = [
        (
            ScheduleSpec(
                f"s{n:02d}", "t", "0 3 * * *", "UTC", "{}", "default", 0, ScheduleSource.CODE
            ),
            START,
        )
        for n in range(30)
    ]
    racing = db.backend != "sqlite"
    both_inserting = threading.Barrier(2 if racing else 1, timeout=BARRIER_TIMEOUT)
    first_insert: set[int] = set()
    table = stores[0].schema.schedules.name
    errors: list[BaseException] = []

    def at_insert(connection: Any, cursor: Any, statement: str, *_: object) -> None:
        if statement.startswith(f"INSERT INTO {table} ") and id(connection) not in first_insert:
            first_insert.add(id(connection))
            both_inserting.wait()

    def sync(store: SqlStore) -> None:
        try:
            assert store.schedules.upsert_many(specs, START, "code") == {}
        except BaseException as error:
            errors.append(error)
            both_inserting.abort()

    for store in stores:
        event.listen(store.engine, "before_cursor_execute", at_insert)
    threads = [threading.Thread(target=sync, args=(store,)) for store in stores]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert [s.name for s in stores[0].schedules.all()] == [spec.name for spec, _ in specs]
    for spec, _ in specs:
        history = stores[0].schedules.history_of(spec.name)
        assert [change.action for change in history] == [ScheduleAction.CREATED]
