"""Every query behind ``rota check``, ``rota.jobs()``, ``rota.counts()``, ``rota schedules``, the
dashboard overview and the rescue is served by an index, not a scan of the jobs table.

The statements are captured as the store sends them (with their parameters) and EXPLAINed on
a table holding a history of finished jobs, a few live ones and schedules with past ticks: the
plan, not a timing, is what stays true when the history grows to millions of rows.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from datetime import datetime, timedelta
from typing import Any

import pytest
from sqlalchemy import insert, text

from rota.core.model import FINISHED_WINDOW, JobState
from rota.core.schedules import ScheduleSource, ScheduleSpec
from rota.store import Store, open_store
from rota.store.sql import SqlStore
from tests.conftest import START, drop_prefixed_tables, server_url
from tests.helpers import jobs_statements

HISTORY = 5_000
MINUTE = timedelta(minutes=1)
PAYLOAD = '{"v":1,"args":[],"kwargs":{}}'
LIVE = (JobState.PENDING, JobState.PAUSED, JobState.RUNNING)
LIVE_ROWS = {JobState.PENDING: 20, JobState.PAUSED: 10, JobState.RUNNING: 5}
CODE = ScheduleSource.CODE


@pytest.fixture(scope="module", params=["mariadb", "postgres"])
def store(request: pytest.FixtureRequest) -> Iterator[SqlStore]:
    """One filled store per server, shared by the module's tests (filling is the slow part)."""
    url, prefix = server_url(request.param), f"t{uuid.uuid4().hex[:10]}_"
    opened = open_store(url, prefix)
    assert isinstance(opened, SqlStore)
    try:
        opened.migrate()
        fill(opened, request.param)
        yield opened
    finally:
        opened.dispose()
        drop_prefixed_tables(url, prefix)


def fill(store: SqlStore, backend: str) -> None:
    """``HISTORY`` jobs finished over the month before the window, two every-minute schedules
    of 200 past ticks, a few jobs finished within the window, and pending, paused and running
    jobs; the history folded into the tallies up to half a day ago, hour by hour, as the prune
    does.

    Finished rows are inserted finished: rows updated from pending would leave delete-marked
    entries in the claim index until InnoDB purges them, and the optimizer would count them.
    """
    jobs = store.schema.jobs
    old = START - timedelta(days=30)
    ticks = [(name, START - timedelta(minutes=n)) for name in ("a", "b") for n in range(1, 201)]
    rows = [finished(old + n * 8 * MINUTE) for n in range(HISTORY)]
    rows += [finished(START) for _ in range(20)]
    rows += [{**finished(old), "schedule": name, "scheduled_at": at} for name, at in ticks]
    for name in ("a", "b"):
        spec = ScheduleSpec(name, "t", "* * * * *", "UTC", PAYLOAD, "default", 0, CODE)
        store.schedules.upsert(spec, START, START, "test")
    with store.engine.begin() as connection:
        connection.execute(insert(jobs), rows)
        for state, count in LIVE_ROWS.items():
            live = {**finished(START), "state": state.value, "finished_at": None}
            connection.execute(insert(jobs), [live] * count)
    store.finished.fold(START - FINISHED_WINDOW / 2)
    with store.engine.begin() as connection:
        analyze = "ANALYZE {}" if backend == "postgres" else "ANALYZE TABLE {}"
        for table in (jobs, store.schema.hour_tallies):
            connection.execute(text(analyze.format(table.name)))


def finished(at: datetime) -> dict[str, Any]:
    columns = ("run_at", "created_at", "started_at", "finished_at")
    fixed = {"task": "t", "queue": "default", "priority": 0, "payload": PAYLOAD, "attempt": 1}
    return {**fixed, "state": JobState.SUCCEEDED.value, **dict.fromkeys(columns, at)}


def assert_indexed(store: SqlStore, call: Callable[[], object]) -> None:
    """No scan of the jobs table, nor of the hour tallies (a row per group and hour kept)."""
    tables = (store.schema.jobs.name, store.schema.hour_tallies.name)
    backend = store.engine.dialect.name
    with store.engine.connect() as connection:
        for statement, parameters in jobs_statements(store, call):
            explained = connection.exec_driver_sql(f"EXPLAIN {statement}", parameters)
            if backend == "postgresql":
                plan = "\n".join(row[0] for row in explained)
                print(plan)
                assert not any(f"Seq Scan on {table}" in plan for table in tables), statement
                assert "Index" in plan, statement
            else:
                rows = [dict(row) for row in explained.mappings()]
                print(rows)
                for row in (row for row in rows if row["table"] in tables):
                    assert row["key"] is not None, statement
                    assert row["type"] not in ("ALL", "index"), f"a scan: {statement}"


SINCE = START - FINISHED_WINDOW
CALLS: dict[str, Callable[[Store], object]] = {
    "counts": lambda store: store.finished.counts(SINCE),
    "schedule stats": lambda store: store.schedules.stats(SINCE),
    "stranded": lambda store: store.reads.stranded(START),
    "live jobs": lambda store: store.reads.jobs(states=LIVE, limit=100),
    "every live job": lambda store: store.reads.jobs(states=LIVE, limit=None),
    "running summaries": lambda store: store.reads.summaries(
        states=(JobState.RUNNING,), limit=10_000
    ),
    "finished per hour": lambda store: store.reads.finished_per_period(
        [START - timedelta(hours=24 - n) for n in range(25)]
    ),
    # Not inspection, but as bound to the history: an idle worker sends it every poll.
    "idle outlook": lambda store: store.outlook(["default"], ["t"], START),
    # Its paused-queue subquery must leave the claim index to the jobs.
    "claim": lambda store: store.jobs.claim("w", ["default"], ["t"], 1, START, START),
    # A lease that ended or that there is none of.
    "expired leases": lambda store: store.jobs.expired_leases(START, 100),
    # rota check reads every unfinished job, found by state ranges around the final ones.
    "unreadable rows": lambda store: store.unreadable(1000),
    "unknown states": lambda store: store.reads.jobs(states=(JobState.UNKNOWN,), limit=None),
    # A firing tick of a schedule whose policy is skip or queue reads its newest runs.
    "unfinished runs": lambda store: unfinished_runs(store),
    # A prune's batch: the oldest hour's range of the finished index (it deletes 408 rows of
    # the history's first hour, which leaves the other plans as they were).
    "prune batch": lambda store: store.finished.prune(
        [JobState.SUCCEEDED], START - timedelta(days=29), 500
    ),
}


def unfinished_runs(store: Store) -> dict[str, tuple[list[int], set[datetime]]]:
    assert isinstance(store, SqlStore)
    with store.engine.connect() as connection:
        return store.schedules.overlap.unfinished(connection, {"a": [START], "b": [START]})


@pytest.mark.parametrize("name", list(CALLS))
def test_inspection_query_is_served_by_an_index(store: SqlStore, name: str) -> None:
    assert_indexed(store, lambda: CALLS[name](store))
