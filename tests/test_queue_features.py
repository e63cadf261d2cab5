"""Named queues, priorities, unique jobs, transactional enqueue, retention and run-now."""

from __future__ import annotations

import asyncio
import threading
from collections import defaultdict
from collections.abc import Callable
from datetime import timedelta

import pytest
from click.testing import CliRunner
from sqlalchemy import text

from rota import Enqueue, JobContext, Rota, TaskDefinition
from rota.cli import main
from rota.testing import FakeClock
from tests.conftest import START, Database
from tests.helpers import eventually


def test_each_queue_keeps_its_own_concurrency(make_rota: Callable[..., Rota]) -> None:
    rota = make_rota(queues={"default": 3, "mail": 1})
    current: dict[str, int] = defaultdict(int)
    peak: dict[str, int] = defaultdict(int)

    async def tracked(queue: str) -> None:
        current[queue] += 1
        peak[queue] = max(peak[queue], current[queue])
        await asyncio.sleep(0.02)
        current[queue] -= 1

    @rota.task
    async def work(ctx: JobContext) -> None:
        await tracked("default")

    @rota.task(queue="mail")
    async def mail(ctx: JobContext) -> None:
        await tracked("mail")

    ids = [rota.queue(work) for _ in range(24)] + [rota.queue(mail) for _ in range(8)]

    async def scenario() -> None:
        async with rota:
            await eventually(lambda: all(rota.job(i).state.value == "succeeded" for i in ids))

    asyncio.run(scenario())
    assert dict(peak) == {"default": 3, "mail": 1}


def test_a_worker_claims_only_from_its_queues(make_rota: Callable[..., Rota]) -> None:
    rota = make_rota()

    @rota.task
    def work(ctx: JobContext) -> None: ...

    @rota.task(queue="mail")
    def mail(ctx: JobContext) -> None: ...

    other, mine = rota.queue(work), rota.queue(mail)

    async def scenario() -> None:
        await rota.start(queues=("mail",))
        try:
            await eventually(lambda: rota.job(mine).state.value == "succeeded")
            await asyncio.sleep(0.2)  # several polls
            assert rota.job(other).state.value == "pending"
        finally:
            await rota.stop()

    asyncio.run(scenario())


def test_lower_priority_first_then_run_at(make_rota: Callable[..., Rota], clock: FakeClock) -> None:
    rota = make_rota(concurrency=1)
    order: list[str] = []

    @rota.task
    def step(ctx: JobContext, label: str) -> None:
        order.append(label)

    rota.queue(step, "late-normal", run_at=clock.now() - timedelta(seconds=1))
    rota.queue(step, "early-normal", run_at=clock.now() - timedelta(seconds=5))
    rota.queue(step, "urgent", priority=-10)
    rota.queue(step, "background", priority=10, run_at=clock.now() - timedelta(hours=1))
    rota.drain()
    assert order == ["urgent", "early-normal", "late-normal", "background"]


def test_unique_key_is_race_safe(make_rota: Callable[..., Rota]) -> None:
    producers = [make_rota() for _ in range(8)]
    for producer in producers:
        producer.define_task(TaskDefinition(name="invoice", handler=lambda ctx, number: None))
    producers[0].jobs()
    got: list[int] = []
    lock = threading.Lock()

    def produce(producer: Rota) -> None:
        for _ in range(100):
            job_id = producer.queue("invoice", 42, unique_key="invoice:42")
            with lock:
                got.append(job_id)

    threads = [threading.Thread(target=produce, args=(p,)) for p in producers]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(got) == 800
    assert len(set(got)) == 1
    assert [s.id for s in producers[0].jobs()] == [got[0]]
    assert producers[0].drain().succeeded == 1
    again = producers[0].queue("invoice", 42, unique_key="invoice:42")
    assert again != got[0], "a finished job frees its key"


def test_per_task_unique_key_from_the_arguments(rota: Rota) -> None:
    @rota.task(unique=True)
    def refresh(ctx: JobContext, account: int) -> None: ...

    first = rota.queue(refresh, 7)
    assert rota.queue(refresh, 7) == first
    assert rota.queue(refresh, 8) != first
    assert rota.queue(refresh, 7, unique_key="explicit") != first
    assert rota.cancel(first) is True
    assert rota.queue(refresh, 7) != first, "a cancelled job frees its key"


def test_transactional_enqueue_follows_the_callers_transaction(rota: Rota, db: Database) -> None:
    @rota.task
    def welcome(ctx: JobContext, user: int) -> None: ...

    rota.jobs()
    engine = db.engine()

    def signup_that_fails() -> None:
        with engine.begin() as connection:
            rota.queue(welcome, 1, connection=connection)
            raise RuntimeError("the signup failed")

    with pytest.raises(RuntimeError):
        signup_that_fails()
    assert rota.jobs() == []
    with engine.begin() as connection:
        connection.execute(text("SELECT 1"))
        kept = rota.queue(welcome, 2, connection=connection)
    engine.dispose()
    assert rota.drain().succeeded == 1
    assert rota.job(kept).state.value == "succeeded"


def test_retention_prunes_old_finished_jobs_in_batches(
    make_rota: Callable[..., Rota], clock: FakeClock
) -> None:
    rota = make_rota()

    @rota.task(retries=0)
    def outcome(ctx: JobContext, fail: bool) -> None:
        if fail:
            raise RuntimeError("no")

    rota.queue_many([Enqueue(outcome, False) for _ in range(1_200)])
    failed = rota.queue(outcome, True)
    cancelled = rota.queue(outcome, False, delay=60)
    rota.cancel(cancelled)
    rota.drain()
    waiting = rota.queue(outcome, False, delay=timedelta(days=100))
    assert rota.prune() == 0
    clock.advance(timedelta(days=8))
    assert rota.prune() == 1_200
    assert {j.id for j in rota.store.reads.jobs(limit=10)} == {failed, cancelled, waiting}
    clock.advance(timedelta(days=23))
    # The command line reads the real clock, months after the fake one: both are old enough.
    result = CliRunner().invoke(
        main, ["prune", "--url", rota.config.url, "--table-prefix", rota.config.table_prefix]
    )
    assert result.exit_code == 0, result.output
    assert "pruned 2 finished job(s)" in result.output
    assert rota.prune() == 0
    assert [j.id for j in rota.store.reads.jobs(limit=10)] == [waiting]


def test_run_now_leaves_the_cron_ticks_alone(rota: Rota, clock: FakeClock) -> None:
    ran: list[tuple[object, bool]] = []

    @rota.task(cron="0 * * * *")
    def hourly(ctx: JobContext) -> None:
        ran.append((ctx.scheduled_at, ctx.manual))

    rota.drain()
    assert ran == [(START, False)], "the 09:00 tick, at the moment the schedule was created"
    before = rota.store.schedules.get("hourly")
    job_id = rota.run_now("hourly")
    assert rota.drain().succeeded == 1
    assert ran[1] == (START, True), "a manual run's tick is the moment it was asked for"
    job = rota.job(job_id)
    assert (job.schedule, job.scheduled_at, job.manual) == ("hourly", START, True)
    assert rota.store.schedules.get("hourly") == before
    clock.advance(timedelta(hours=1))
    rota.drain()
    assert ran[2] == (START + timedelta(hours=1), False)
    assert not rota.job(job_id - 1).manual, "the cron tick's job"


def test_manual_runs_never_meet_a_tick_and_count_in_the_schedules_runs(
    rota: Rota, clock: FakeClock
) -> None:
    failing = [True]

    @rota.task(cron="0 * * * *", retries=0)
    def hourly(ctx: JobContext) -> None:
        if failing:
            failing.pop()
            raise RuntimeError("boom")

    assert rota.drain().failed == 1, "the 09:00 tick"
    twice = [rota.run_now("hourly"), rota.run_now("hourly")]
    assert rota.drain().succeeded == 2
    moments = {rota.job(job_id).scheduled_at for job_id in twice}
    assert moments == {START}, "two manual runs at the 09:00 tick's own moment"
    stats = rota.inspect.schedule_stats(START - timedelta(minutes=1))["hourly"]
    assert (stats.runs, stats.failures) == (3, 1)
    (status,) = [s for s in rota.jobs() if s.id == "hourly"]
    assert (status.runs, status.failures) == (3, 1)
