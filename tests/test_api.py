"""The public API of DESIGN.md on every backend, driven by ``drain`` and a fake clock."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from datetime import timedelta

import pytest
from sqlalchemy import text

import rota as rota_package
from rota import JobContext, Rota, TaskDefinition
from rota.errors import ConfigError, InvalidArguments, JobNotFound, TaskNotRegistered
from rota.testing import FakeClock
from tests.helpers import sql_store


def test_public_names_are_exported_and_typed() -> None:
    for name in rota_package.__all__:
        assert hasattr(rota_package, name), name
    assert {"Rota", "JobContext", "TaskDefinition", "JobState", "JobNotFound"} <= set(
        rota_package.__all__
    )
    from importlib.resources import files

    assert files("rota").joinpath("py.typed").is_file()


def test_queue_by_handler_and_by_name_then_drain(rota: Rota) -> None:
    seen: list[tuple[object, ...]] = []

    @rota.task
    def greet(ctx: JobContext, name: str, punctuation: str = "!") -> None:
        seen.append((ctx.job_id, ctx.task, ctx.attempt, name, punctuation))

    first = rota.queue(greet, "ada", punctuation="?")
    second = rota.queue("greet", "bob")
    assert second > first
    result = rota.drain()
    assert (result.succeeded, result.failed, result.retried) == (2, 0, 0)
    assert sorted(seen) == [(first, "greet", 1, "ada", "?"), (second, "greet", 1, "bob", "!")]
    job = rota.job(first)
    assert job.state.value == "succeeded"
    assert (job.task, job.queue, job.args, job.kwargs) == (
        "greet",
        "default",
        ("ada",),
        {"punctuation": "?"},
    )
    assert job.created_at is not None and job.started_at is not None and job.finished_at
    assert job.attempt == 1 and job.max_attempts == 4


def test_async_handlers_and_handlers_without_parameters(rota: Rota) -> None:
    calls: list[str] = []

    @rota.task
    async def fetch(ctx: JobContext, url: str) -> None:
        await asyncio.sleep(0)
        calls.append(url)

    def tick() -> None:
        calls.append("tick")

    rota.define_task(TaskDefinition(name="demoTask", handler=tick))
    rota.queue(fetch, "https://example.com")
    rota.queue("demoTask")
    assert rota.drain().succeeded == 2
    assert sorted(calls) == ["https://example.com", "tick"]


def test_delay_and_run_at_wait_for_the_clock(rota: Rota, clock: FakeClock) -> None:
    ran: list[str] = []

    @rota.task
    def note(ctx: JobContext, label: str) -> None:
        ran.append(label)

    delayed = rota.queue(note, "delayed", delay=30)
    rota.queue(note, "at", run_at=clock.now() + timedelta(minutes=2))
    assert rota.job(delayed).run_at == clock.now() + timedelta(seconds=30)
    assert rota.drain().total == 0
    clock.advance(30)
    assert rota.drain().succeeded == 1
    clock.advance(timedelta(minutes=2))
    assert rota.drain().succeeded == 1
    assert ran == ["delayed", "at"]


def test_reserved_names_reach_the_handler_through_args_and_kwargs(rota: Rota) -> None:
    got: list[object] = []

    @rota.task
    def reserved(ctx: JobContext, delay: int, queue: str) -> None:
        got.append((delay, queue))

    rota.queue(reserved, kwargs={"delay": 5, "queue": "q"})
    rota.queue(reserved, args=[6, "r"])
    rota.drain()
    assert sorted(got) == [(5, "q"), (6, "r")]  # type: ignore[type-var]
    with pytest.raises(InvalidArguments):
        rota.queue(reserved, 1, args=[2])


def test_unserialisable_arguments_write_nothing(rota: Rota, db: object) -> None:
    @rota.task
    def store_it(ctx: JobContext, value: object) -> None: ...

    with pytest.raises(InvalidArguments) as info:
        rota.queue(store_it, object())
    assert info.value.code == "INVALID_ARGUMENTS"
    assert rota.jobs() == []


def test_bad_enqueue_options(rota: Rota, clock: FakeClock) -> None:
    @rota.task
    def noop(ctx: JobContext) -> None: ...

    with pytest.raises(InvalidArguments):
        rota.queue(noop, delay=1, run_at=clock.now())
    with pytest.raises(InvalidArguments):
        rota.queue(noop, delay=-1)
    with pytest.raises(TaskNotRegistered) as info:
        rota.queue(print)
    assert info.value.code == "TASK_NOT_REGISTERED"


def test_job_not_found(rota: Rota) -> None:
    with pytest.raises(JobNotFound) as info:
        rota.job(987654)
    assert info.value.code == "JOB_NOT_FOUND"
    assert rota.cancel(987654) is False


def test_cancel_pending_job(rota: Rota) -> None:
    ran: list[int] = []

    @rota.task
    def work(ctx: JobContext) -> None:
        ran.append(ctx.job_id)

    job_id = rota.queue(work)
    assert rota.cancel(job_id) is True
    assert rota.job(job_id).state.value == "cancelled"
    assert rota.cancel(job_id) is False
    assert rota.drain().total == 0
    assert ran == []


def test_jobs_lists_pending_and_running(rota: Rota, clock: FakeClock) -> None:
    @rota.task
    def work(ctx: JobContext) -> None: ...

    done = rota.queue(work)
    rota.drain()
    waiting = rota.queue(work, delay=60)
    statuses = rota.jobs()
    assert [s.id for s in statuses] == [waiting]
    status = statuses[0]
    assert (status.name, status.status, status.cron, status.runs, status.failures) == (
        "work",
        "pending",
        None,
        0,
        0,
    )
    assert status.next_run == clock.now() + timedelta(seconds=60)
    assert done not in [s.id for s in statuses]


def test_task_queued_by_name_from_another_service_waits_for_a_worker_that_knows_it(
    make_rota: Callable[..., Rota], caplog: pytest.LogCaptureFixture
) -> None:
    producer = make_rota()
    job_id = producer.queue("send_invoice", 42)
    assert "not registered here nor by any live worker" in caplog.text
    assert producer.drain().total == 0
    assert producer.job(job_id).max_attempts is None

    consumer = make_rota()
    paid: list[int] = []

    @consumer.task(retries=0)
    def send_invoice(ctx: JobContext, number: int) -> None:
        paid.append(number)

    assert consumer.drain().succeeded == 1
    assert paid == [42]


def test_duplicate_task_names_are_refused(rota: Rota) -> None:
    @rota.task(name="dup")
    def one(ctx: JobContext) -> None: ...

    with pytest.raises(ConfigError, match="already defined"):

        @rota.task(name="dup")
        def two(ctx: JobContext) -> None: ...


def test_aqueue_and_async_context_manager(rota: Rota) -> None:
    @rota.task
    async def hello(ctx: JobContext, who: str) -> None: ...

    async def scenario() -> int:
        async with rota:
            return await rota.aqueue(hello, "world")

    job_id = asyncio.run(scenario())
    assert rota.job(job_id).args == ("world",)


def test_migrations_can_be_turned_off(make_rota: Callable[..., Rota]) -> None:
    manual = make_rota(auto_migrate=False)

    @manual.task
    def noop(ctx: JobContext) -> None: ...

    with pytest.raises(rota_package.StoreError):
        manual.queue(noop)
    make_rota().drain()  # the default migrates
    assert manual.queue(noop) > 0


def test_unicode_arguments_survive_utf8mb4(rota: Rota) -> None:
    @rota.task
    def say(ctx: JobContext, text_: str) -> None: ...

    job_id = rota.queue(say, "héllo 🚀 世界")
    assert rota.job(job_id).args == ("héllo 🚀 世界",)
    with sql_store(rota).engine.connect() as connection:
        count = connection.execute(text(f"SELECT COUNT(*) FROM {sql_store(rota).schema.jobs.name}"))
        assert count.scalar() == 1


def test_a_job_queued_by_name_goes_to_the_queue_its_worker_registered(
    make_rota: Callable[..., Rota],
) -> None:
    consumer = make_rota()

    @consumer.task(queue="slow")
    def resize(ctx: JobContext) -> None: ...

    producer = make_rota()

    async def scenario() -> tuple[int, int]:
        async with consumer:
            routed = await producer.aqueue("resize")
            chosen = await producer.aqueue("resize", queue="default")
            return routed, chosen

    routed, chosen = asyncio.run(scenario())
    assert producer.job(routed).queue == "slow"
    assert producer.job(chosen).queue == "default"
