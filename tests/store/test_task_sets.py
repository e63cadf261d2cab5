"""A claim and an idle look name the worker's tasks by the key of their set: what they send
does not grow with the number of tasks, and each worker still takes only its own tasks' jobs."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import pytest
from sqlalchemy import event

from rota.core.model import NewJob
from rota.store import SqlStore, open_store
from tests.conftest import START, Database

PAYLOAD = '{"v":1,"args":[],"kwargs":{}}'
LEASE = START + timedelta(minutes=1)


@pytest.fixture
def store(db: Database) -> Iterator[SqlStore]:
    opened = open_store(db.url, db.prefix)
    opened.migrate()
    yield opened
    opened.dispose()


def sent(store: SqlStore, call: Any) -> list[int]:
    """The size of each statement ``call`` sends, its parameters included."""
    sizes: list[int] = []

    def record(connection: Any, cursor: Any, statement: str, parameters: Any, *_: Any) -> None:
        sizes.append(len(statement) + len(repr(parameters)))

    event.listen(store.engine, "before_cursor_execute", record)
    try:
        call()
    finally:
        event.remove(store.engine, "before_cursor_execute", record)
    return sizes


def test_a_claim_and_a_look_send_as_much_for_10000_tasks_as_for_10(store: SqlStore) -> None:
    few = [f"task-{n:05d}" for n in range(10)]
    many = [f"task-{n:05d}" for n in range(10_000)]
    store.jobs.enqueue([NewJob(many[-1], PAYLOAD, run_at=START)], START)
    for tasks in (few, many):  # each set written once, before what is measured
        store.outlook(["default"], tasks, START)

    def claim(tasks: list[str]) -> list[int]:
        return sent(store, lambda: store.jobs.claim("w", ["default"], tasks, 10, START, LEASE))

    def look(tasks: list[str]) -> list[int]:
        return sent(store, lambda: store.outlook(["default"], tasks, START))

    assert look(many) == look(few)
    found, none = claim(many), claim(few)
    assert found[0] == none[0], "the claim's query"
    assert max(found) < 5_000, "a statement, not 10,000 names"


def test_each_worker_takes_only_the_jobs_of_its_own_tasks(store: SqlStore) -> None:
    store.jobs.enqueue([NewJob(task, PAYLOAD, run_at=START) for task in "abcab"], START)
    mine = store.jobs.claim("w1", ["default"], ["a", "c"], 10, START, LEASE)
    assert sorted(job.task for job in mine) == ["a", "a", "c"]
    assert store.outlook(["default"], ["a", "c"], START).jobs_due is False
    assert store.outlook(["default"], ["b"], START).jobs_due is True
    other = store.jobs.claim("w2", ["default"], ["b", "x"], 10, START, LEASE)
    assert sorted(job.task for job in other) == ["b", "b"]


def test_a_set_is_written_once_whoever_writes_it(db: Database, store: SqlStore) -> None:
    """A second process finds the set another wrote (its rows are the same, keyed alike)."""
    again = open_store(db.url, db.prefix)
    try:
        store.jobs.enqueue([NewJob("a", PAYLOAD, run_at=START)], START)
        assert store.outlook(["default"], ["a", "b"], START).jobs_due is True
        taken = again.jobs.claim("w", ["default"], ["b", "a"], 10, START, LEASE)
        assert [job.task for job in taken] == ["a"]
        with store.engine.connect() as connection:
            rows = connection.execute(store.schema.task_sets.select()).all()
        assert sorted(row.task for row in rows) == ["a", "b"]
    finally:
        again.dispose()
