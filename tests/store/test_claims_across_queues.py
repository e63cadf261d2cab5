"""A claim across several queues takes the best jobs of them all, reads a few pages per queue
whatever the backlog, locks only the rows it takes, and leaves the rest to a second claimer;
jobs scheduled ahead at a more urgent priority are not read at all.

``queue IN (...)`` read, sorted and (on MySQL) locked every pending row (issue 32); each queue
now gives the keys of its best jobs from the claim index alone, and the best of them are read
and locked by id (``ClaimCandidates.nearest``).
A claim read its queue in priority order past every job not yet due at a more urgent priority;
it now takes the priorities that hold due jobs one at a time (``ClaimCandidates.levels``).
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta

import pytest
from bench.scale_plans import claim_reads
from sqlalchemy import create_engine, text
from sqlalchemy.engine import Connection, make_url
from sqlalchemy.sql import ClauseElement

from rota import Rota
from rota.core.limits import FlowLimits
from rota.core.model import NewJob
from rota.store.urls import normalise_url
from rota.testing import FakeClock
from tests.conftest import Database, drop_prefixed_tables
from tests.helpers import sql_store

PAYLOAD = '{"v":1,"args":[],"kwargs":{}}'
QUEUES = [f"q{i}" for i in range(20)]
LIMIT = 10
BACKLOG = 100_000
"""Due jobs over ``QUEUES`` and 5 priorities, 1 in 100 of them in each (queue, priority)."""
AHEAD = 50_000
"""Jobs of queue ``ahead`` a day ahead at priority -1, beside 1,000 due at priority 0."""


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


@pytest.fixture
def settled_db(server_db: Database) -> Iterator[Database]:
    """``server_db``, but on PostgreSQL in a database no other test uses. VACUUM marks a page
    all-visible only once no transaction of the same database may still see it otherwise: the
    other test processes' transactions kept pages unmarked, and then the index-only reads of
    the claim fetched heap pages too (1,473 pages read instead of about 800)."""
    if server_db.backend != "postgres":
        yield server_db
        return
    url = make_url(server_db.url)
    own = url.set(database=f"{url.database}_settled")
    engine = create_engine(normalise_url(server_db.url), isolation_level="AUTOCOMMIT")
    try:
        with engine.connect() as connection:
            known = "SELECT 1 FROM pg_database WHERE datname = :name"
            if connection.execute(text(known), {"name": own.database}).first() is None:
                connection.execute(text(f'CREATE DATABASE "{own.database}"'))
    finally:
        engine.dispose()
    database = Database(
        server_db.backend, own.render_as_string(hide_password=False), server_db.prefix
    )
    yield database
    drop_prefixed_tables(database.url, database.prefix)


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


@pytest.mark.parametrize("limited", [False, True], ids=["plain", "flow-limited"])
def test_jobs_it_cannot_take_do_not_hide_those_behind_them(
    rota: Rota, clock: FakeClock, limited: bool
) -> None:
    """Ahead of its own jobs, queue ``a`` holds more jobs of a task this worker does not run
    than a claim reads the keys of: the claim still takes the best jobs it can, once each,
    whether it updates the rows as it locks them or (flow control) locks them first."""
    now = clock.now()
    limits = {"noop": FlowLimits("noop", concurrency=100)} if limited else None

    def job(task: str, queue: str, age: int) -> NewJob:
        return NewJob(task, PAYLOAD, run_at=now - timedelta(seconds=age), queue=queue)

    def claim_ages(limit: int) -> list[tuple[str, int]]:
        until = now + timedelta(minutes=1)
        taken = rota.store.jobs.claim("w", ["a", "b"], ["noop"], limit, now, until, limits)
        return [(job.queue, round((now - job.run_at).total_seconds())) for job in taken]

    jobs = [job("noop", "a", 100 - n) for n in range(3)]
    jobs += [job("other", "a", 90 - n) for n in range(10)]
    jobs += [job("noop", "a", 50 - n) for n in range(3)] + [job("noop", "b", 60)]
    rota.store.jobs.enqueue(jobs, now)
    assert claim_ages(6) == [("a", 100), ("a", 99), ("a", 98), ("b", 60), ("a", 50), ("a", 49)]
    assert claim_ages(6) == [("a", 48)]


def _fill(rota: Rota, clock: FakeClock, postgres: bool) -> None:
    """``BACKLOG`` due jobs over ``QUEUES``, then ``AHEAD`` and 1,000 due in ``ahead``, written
    by the server (``INSERT ... SELECT``), then ANALYZE (and VACUUM, as autovacuum would)."""
    store = sql_store(rota)
    jobs = store.schema.jobs.name
    if postgres:
        source, n, stamp = "generate_series(1, {count}) AS g(n)", "n", "TIMESTAMP"
        ago = f"CAST(:now AS {stamp}) - {n} * INTERVAL '1 second'"
        ahead = f"CAST(:now AS {stamp}) + INTERVAL '1 day' + {n} * INTERVAL '1 second'"
    else:
        source, n, stamp = "seq_1_to_{count}", "seq", "DATETIME(6)"
        ago = f"CAST(:now AS {stamp}) - INTERVAL {n} SECOND"
        ahead = f"CAST(:now AS {stamp}) + INTERVAL 1 DAY + INTERVAL {n} SECOND"
    columns = "task, queue, priority, state, payload, attempt, max_attempts, run_at, created_at"
    rows = [
        (BACKLOG, f"CONCAT('q', {n} % 20)", f"({n} % 100 - {n} % 20) / 20", ago),
        (AHEAD, "'ahead'", "-1", ahead),
        (1_000, "'ahead'", "0", ago),
    ]
    now = clock.now().replace(tzinfo=None)
    with store.engine.begin() as connection:
        for count, queue, priority, run_at in rows:
            connection.execute(
                text(
                    f"INSERT INTO {jobs} ({columns}) SELECT 'noop', {queue}, {priority}, "
                    f"'pending', :payload, 0, 1, {run_at}, CAST(:now AS {stamp}) "
                    f"FROM {source.format(count=count)}"
                ),
                {"now": now, "payload": PAYLOAD},
            )
    analyse = "VACUUM ANALYZE" if postgres else "ANALYZE TABLE"
    with store.engine.connect() as connection:
        connection = connection.execution_options(isolation_level="AUTOCOMMIT")
        connection.execute(text(f"{analyse} {jobs}"))


def _literal(rota: Rota, query: ClauseElement) -> str:
    engine = sql_store(rota).engine
    return str(query.compile(engine, compile_kwargs={"literal_binds": True}))


def _locked(connection: Connection, rota: Rota) -> int:
    """Rows another transaction holds: those a locking read skips."""
    jobs = sql_store(rota).schema.jobs.name
    with connection.begin():
        total = connection.execute(text(f"SELECT COUNT(*) FROM {jobs}")).scalar_one()
        free = f"SELECT id FROM {jobs} FOR UPDATE SKIP LOCKED"
        held = total - len(connection.execute(text(free)).all())
        connection.rollback()
    return int(held)


@pytest.mark.slow
def test_a_claim_reads_and_locks_a_few_pages_per_queue_at_any_backlog(
    settled_db: Database, clock: FakeClock
) -> None:
    """At 100,000 due jobs over 20 queues and 5 priorities, a claim reads a few pages per
    queue, locks the rows it takes and no other (``information_schema.innodb_trx``, and another
    transaction's ``SKIP LOCKED``), and a second claimer gets as many; beside 50,000 jobs a day
    ahead at a more urgent priority, a claim does not read them."""
    rota = serving_noop(settled_db, clock)
    postgres = settled_db.backend == "postgres"
    store = sql_store(rota)
    try:
        _fill(rota, clock, postgres)
        now = clock.now()
        reads = claim_reads(rota, QUEUES, ["noop"], LIMIT, now)
        print(f"a claim across {len(QUEUES)} queues read {reads.read} pages")
        assert reads.taken == LIMIT
        # A few seeks per (queue, priority) for the levels, a few pages per queue for its best
        # keys, and per job taken its row, found by id and locked, with a probe of its task's
        # set (reading each queue's best rows read about 7 pages per row of them).
        assert reads.read <= 10 * len(QUEUES) * 5 + 10 * len(QUEUES) + 12 * LIMIT, reads.read
        reads = claim_reads(rota, ["ahead"], ["noop"], LIMIT, now)
        print(f"a claim beside {AHEAD:,} jobs ahead read {reads.read} pages")
        assert reads.taken == LIMIT
        # What 10 due jobs take; walking past the jobs ahead read hundreds of pages.
        assert reads.read <= 12 * LIMIT + 30, reads.read
        candidates = store.jobs.candidates
        candidates.task_sets.key(["noop"])
        with store.engine.connect() as connection:
            (level, *_) = candidates.levels(connection, QUEUES, now)
        sql = _literal(rota, candidates.nearest(level, ["noop"], LIMIT, now))
        with store.engine.connect() as first, store.engine.connect() as second:
            first.begin()
            taken = {row.id for row in first.execute(text(sql))}
            if not postgres:
                rows_locked = (
                    "SELECT trx_rows_locked FROM information_schema.innodb_trx "
                    "WHERE trx_mysql_thread_id = CONNECTION_ID()"
                )
                assert first.execute(text(rows_locked)).scalar_one() == LIMIT
            with store.engine.connect() as third:
                assert _locked(third, rota) == LIMIT
            second.begin()
            also = {row.id for row in second.execute(text(sql))}
            assert len(taken) == len(also) == LIMIT and not taken & also
            first.rollback()
            second.rollback()
    finally:
        rota.store.dispose()
