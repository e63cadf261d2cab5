"""A claim across several queues takes the best jobs of them all, reads a few rows per queue
whatever the backlog, locks only the rows it takes, and leaves the rest to a second claimer.

``queue IN (...)`` read, sorted and (on MySQL) locked every pending row (issue 32); each queue
now gives its own best rows from the claim index and the merged candidates are locked by id.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import timedelta

import pytest
from sqlalchemy import text
from sqlalchemy.engine import Connection

from rota import Rota
from rota.core.model import NewJob
from rota.testing import FakeClock
from tests.conftest import Database
from tests.helpers import sql_store

PAYLOAD = '{"v":1,"args":[],"kwargs":{}}'
QUEUES = [f"q{i}" for i in range(20)]
LIMIT = 10


def serving_noop(database: Database, clock: FakeClock) -> Rota:
    """A Rota with one task, ``noop``, and its tables made."""
    rota = Rota(database.url, table_prefix=database.prefix, clock=clock)
    rota.task(name="noop")(lambda ctx: None)
    rota.jobs()
    return rota


@pytest.fixture
def rota(db: Database, clock: FakeClock) -> Iterator[Rota]:
    rota = serving_noop(db, clock)
    yield rota
    rota.store.dispose()


def claim(rota: Rota, clock: FakeClock, queues: list[str], limit: int) -> list[tuple[str, int]]:
    now = clock.now()
    taken = rota.store.jobs.claim("w", queues, ["noop"], limit, now, now + timedelta(minutes=1))
    return [(job.queue, job.priority) for job in taken]


def test_the_best_jobs_of_every_queue_come_first(rota: Rota, clock: FakeClock) -> None:
    now = clock.now()
    jobs = [
        NewJob("noop", PAYLOAD, run_at=now - timedelta(seconds=age), queue=queue, priority=prio)
        for queue, prio, age in [
            ("a", 5, 30),
            ("a", 1, 10),
            ("b", 1, 20),
            ("b", 0, 1),
            ("c", 3, 50),
            ("c", -2, 0),
            ("c", 0, 0),
        ]
    ]
    jobs.append(NewJob("noop", PAYLOAD, run_at=now + timedelta(seconds=5), queue="a", priority=-9))
    jobs.append(NewJob("noop", PAYLOAD, run_at=now, queue="elsewhere", priority=-9))
    rota.store.jobs.enqueue(jobs, now)
    assert claim(rota, clock, ["a", "b", "c"], 4) == [("c", -2), ("b", 0), ("c", 0), ("b", 1)]
    assert claim(rota, clock, ["c", "a"], 10) == [("a", 1), ("c", 3), ("a", 5)]
    assert claim(rota, clock, ["a", "b", "c"], 10) == []


def _backlog(rota: Rota, clock: FakeClock, per_queue: int) -> None:
    """``per_queue`` due jobs in each of ``QUEUES``, over five priorities, each at its own time
    (PostgreSQL's claim index ends at ``run_at``: a claim reads every row tied with the last
    one it takes)."""
    store = sql_store(rota)
    now = clock.now()
    for queue in QUEUES:
        store.jobs.enqueue(
            [
                NewJob(
                    "noop", PAYLOAD, run_at=now - timedelta(seconds=i), queue=queue, priority=i % 5
                )
                for i in range(per_queue)
            ],
            now,
        )
    jobs = store.schema.jobs
    with store.engine.begin() as connection:
        analyse = "ANALYZE" if store.engine.dialect.name == "postgresql" else "ANALYZE TABLE"
        connection.execute(text(f"{analyse} {jobs.name}"))


def _claim_sql(rota: Rota, clock: FakeClock) -> str:
    store = sql_store(rota)
    query = store.jobs.candidates.query(QUEUES, ["noop"], LIMIT, clock.now())
    return str(query.compile(store.engine, compile_kwargs={"literal_binds": True}))


def _rows_read(connection: Connection, sql: str, postgres: bool) -> int:
    """Index rows the claim read: PostgreSQL's actual rows of its index scans, MariaDB's
    handler reads of this session."""
    if postgres:
        plan = "\n".join(row[0] for row in connection.execute(text(f"EXPLAIN ANALYZE {sql}")))
        print(plan)
        scans = re.findall(r"Index (?:Only )?Scan .*rows=(\d+) loops=(\d+)", plan)
        return sum(int(rows) * int(loops) for rows, loops in scans)
    status = "SHOW SESSION STATUS LIKE 'Handler_read%'"
    before = {name: int(value) for name, value in connection.execute(text(status))}
    connection.execute(text(sql)).all()
    after = {name: int(value) for name, value in connection.execute(text(status))}
    return sum(after[name] - before[name] for name in after if name != "Handler_read_rnd_next")


@pytest.mark.slow
def test_a_claim_reads_and_locks_a_few_rows_per_queue_at_any_backlog(
    server_db: Database, clock: FakeClock
) -> None:
    rota = serving_noop(server_db, clock)
    postgres = server_db.backend == "postgres"
    engine = sql_store(rota).engine
    try:
        _backlog(rota, clock, per_queue=1_280)
        sql = _claim_sql(rota, clock)
        with engine.connect() as first, engine.connect() as second:
            with first.begin():
                read = _rows_read(first, sql, postgres)
                first.rollback()
            # Per queue: its best rows, each with the probe of its task's set, and the probes
            # of its dependency check and pause.
            assert read <= len(QUEUES) * (2 * LIMIT + 3) + 3 * LIMIT, read
            first.begin()
            taken = {row.id for row in first.execute(text(sql))}
            if not postgres:
                query = (
                    "SELECT trx_rows_locked FROM information_schema.innodb_trx "
                    "WHERE trx_mysql_thread_id = CONNECTION_ID()"
                )
                assert first.execute(text(query)).scalar_one() == LIMIT
            second.begin()
            also = {row.id for row in second.execute(text(sql))}
            assert len(taken) == len(also) == LIMIT and not taken & also
            first.rollback()
            second.rollback()
    finally:
        rota.store.dispose()
