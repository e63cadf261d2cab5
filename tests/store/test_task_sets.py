"""A claim and an idle look name the worker's tasks by the key of their set: what they send
does not grow with the number of tasks, and each worker still takes only its own tasks' jobs."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from datetime import timedelta

import pytest

from rota.core.model import NewJob
from rota.store import SqlStore, open_store
from tests.conftest import START, Database
from tests.helpers import jobs_statements

PAYLOAD = '{"v":1,"args":[],"kwargs":{}}'
LEASE = START + timedelta(minutes=1)


@pytest.fixture
def store(db: Database) -> Iterator[SqlStore]:
    opened = open_store(db.url, db.prefix)
    opened.migrate()
    yield opened
    opened.dispose()


def sent(store: SqlStore, call: Callable[[], object]) -> list[int]:
    """The size of each statement ``call`` sends, its parameters included."""
    return [len(sql) + len(repr(values)) for sql, values in jobs_statements(store, call)]


def test_a_claim_and_a_look_send_as_much_for_10000_tasks_as_for_10(store: SqlStore) -> None:
    few = [f"task-{n:05d}" for n in range(10)]
    many = [f"task-{n:05d}" for n in range(10_000)]
    # A job for each claim, of a task both sets hold: each claim reads, locks and takes one.
    store.jobs.enqueue([NewJob(few[0], PAYLOAD, run_at=START) for _ in range(2)], START)
    for tasks in (few, many):  # each set written once, before what is measured
        store.outlook(["default"], tasks, START)

    def claim(tasks: list[str]) -> list[int]:
        return sent(store, lambda: store.jobs.claim("w", ["default"], tasks, 1, START, LEASE))

    def look(tasks: list[str]) -> list[int]:
        return sent(store, lambda: store.outlook(["default"], tasks, START))

    assert look(many) == look(few)
    many_sent, few_sent = claim(many), claim(few)
    assert len(many_sent) >= 2, "the levels and the claim's own query"
    assert many_sent == few_sent
    assert max(many_sent) < 5_000, "a statement, not 10,000 names"


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
