"""No double claim (invariant 3) under concurrent workers, and the claim query uses its index."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from datetime import timedelta

import pytest
from sqlalchemy import BigInteger, Column, MetaData, Table, func, insert, select, text, update

from rota import JobContext, Rota
from rota.core.model import NewJob
from rota.testing import FakeClock
from tests.conftest import START, Database
from tests.helpers import eventually, sql_store

JOBS = 2_000
"""Enough for every worker to claim many batches side by side (each job commits its own row)."""
HISTORY_ROW = NewJob(task="noop", payload='{"v":1,"args":[],"kwargs":{}}', run_at=START)


@pytest.mark.slow
def test_four_workers_run_every_job_exactly_once(
    db: Database, make_rota: Callable[..., Rota], clock: FakeClock
) -> None:
    engine = db.engine()
    executions = Table(
        db.table("executions"), MetaData(), Column("job_id", BigInteger, primary_key=True)
    )
    executions.create(engine)
    workers = [make_rota(concurrency=8) for _ in range(4)]
    for worker in workers:

        @worker.task(name="record", retries=0)
        def record(ctx: JobContext) -> None:
            with engine.begin() as connection:
                connection.execute(insert(executions).values(job_id=ctx.job_id))

    producer = workers[0]
    producer.jobs()  # connects and migrates
    ids = producer.store.jobs.enqueue(
        [NewJob(task="record", payload='{"v":1,"args":[],"kwargs":{}}', run_at=clock.now())] * JOBS,
        clock.now(),
    )
    assert len(set(ids)) == JOBS
    jobs = sql_store(producer).schema.jobs

    def finished() -> int:
        with engine.connect() as connection:
            query = select(func.count()).where(jobs.c.state.in_(["succeeded", "failed"]))
            return int(connection.execute(query).scalar_one())

    async def scenario() -> None:
        for worker in workers:
            await worker.start()
        try:
            await eventually(lambda: finished() == JOBS, timeout=240, every=0.2)
        finally:
            await asyncio.gather(*(worker.stop() for worker in workers))

    asyncio.run(scenario())
    with engine.connect() as connection:
        states: dict[str, int] = dict(
            connection.execute(select(jobs.c.state, func.count()).group_by(jobs.c.state)).all()
        )
        ran = connection.execute(select(func.count()).select_from(executions)).scalar_one()
        attempts = connection.execute(select(func.max(jobs.c.attempt))).scalar_one()
        owners = connection.execute(
            text(f"SELECT COUNT(DISTINCT lease_owner) FROM {jobs.name}")
        ).scalar_one()
    engine.dispose()
    assert states == {"succeeded": JOBS}
    assert ran == JOBS
    assert attempts == 1
    assert 1 <= owners <= len(workers), "a finished job keeps the worker that ran it"


def test_claim_query_uses_the_claim_index_with_a_large_history(
    server_db: Database, clock: FakeClock
) -> None:
    rota = Rota(server_db.url, table_prefix=server_db.prefix, clock=clock)

    @rota.task
    def noop(ctx: JobContext) -> None: ...

    rota.jobs()
    store = sql_store(rota)
    store.jobs.enqueue([HISTORY_ROW], clock.now())
    jobs = store.schema.jobs
    copied = [column for column in jobs.c if column.name != "id"]
    with store.engine.begin() as connection:
        connection.execute(
            update(jobs).values(state="succeeded", finished_at=clock.now() - timedelta(days=1))
        )
        while connection.execute(select(func.count()).select_from(jobs)).scalar_one() < 100_000:
            connection.execute(insert(jobs).from_select(copied, select(*copied)))
    for _ in range(20):
        rota.queue(noop)
    query = store.jobs.candidates.query(["default"], ["noop"], 10, clock.now())
    sql = str(query.compile(store.engine, compile_kwargs={"literal_binds": True}))
    index = f"ix_{server_db.prefix}jobs_claim"
    with store.engine.begin() as connection:
        if server_db.backend == "postgres":
            connection.execute(text(f"ANALYZE {jobs.name}"))
            plan = "\n".join(row[0] for row in connection.execute(text(f"EXPLAIN {sql}")))
            print(plan)
            assert index in plan
        else:
            connection.execute(text(f"ANALYZE TABLE {jobs.name}"))
            rows = connection.execute(text(f"EXPLAIN {sql}")).mappings().all()
            print(rows)
            assert rows[0]["key"] == index
            assert rows[0]["type"] in ("ref", "range"), "an index lookup, not a scan"
    store.engine.dispose()


@pytest.mark.parametrize("queues", [["default"], ["default", "other"]], ids=["one", "several"])
def test_a_kept_claim_statement_takes_the_time_of_each_claim(
    db: Database, make_rota: Callable[..., Rota], clock: FakeClock, queues: list[str]
) -> None:
    """A claim's statements are built once per shape and kept, the time a parameter: a claim
    of the same shape later takes the jobs that have become due since, and not before."""
    rota = make_rota()
    rota.task(name="noop")(lambda ctx: None)
    rota.jobs()
    now = clock.now()
    soon = [
        NewJob(
            task="noop", payload=HISTORY_ROW.payload, run_at=now + timedelta(seconds=10), queue=q
        )
        for q in queues
    ]
    ids = rota.store.jobs.enqueue(soon, now)

    def claim() -> list[int]:
        at = clock.now()
        until = at + timedelta(minutes=1)
        return sorted(job.id for job in rota.store.jobs.claim("w", queues, ["noop"], 5, at, until))

    assert claim() == []
    clock.advance(9)
    assert claim() == []
    clock.advance(1)
    assert claim() == sorted(ids)
