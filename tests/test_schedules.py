"""Cron schedules on every backend, driven by a fake clock: one job per tick, restarts,
missed ticks, pause/resume/cancel and statuses."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from datetime import datetime, timedelta

import pytest
from sqlalchemy import func, select

from rota import JobContext, Rota, TaskDefinition
from rota.errors import ConfigError, InvalidCron, InvalidTimezone, ScheduleNotFound
from rota.testing import FakeClock
from tests.conftest import START
from tests.helpers import fire_in_lockstep, sql_store

MINUTE = timedelta(minutes=1)


def scheduled_jobs(rota: Rota, name: str | None = None) -> list[tuple[str, datetime]]:
    jobs = sql_store(rota).schema.jobs
    query = select(jobs.c.schedule, jobs.c.scheduled_at).where(jobs.c.schedule.is_not(None))
    if name is not None:
        query = query.where(jobs.c.schedule == name)
    with sql_store(rota).engine.connect() as connection:
        return sorted(
            (row[0], row[1]) for row in connection.execute(query.order_by(jobs.c.scheduled_at))
        )


def test_code_schedule_runs_once_per_tick_with_its_tick_in_the_context(
    rota: Rota, clock: FakeClock
) -> None:
    seen: list[tuple[datetime | None, int]] = []

    @rota.task(cron="*/5 * * * *", tz="Asia/Shanghai", retries=3, timeout=60)
    async def demo_task(ctx: JobContext) -> None:
        seen.append((ctx.scheduled_at, ctx.attempt))

    assert rota.drain().succeeded == 1, "the tick at the very moment it was defined runs"
    assert rota.drain().total == 0
    clock.advance(5 * MINUTE)
    assert rota.drain().succeeded == 1
    assert rota.drain().total == 0
    assert seen == [(START, 1), (START + 5 * MINUTE, 1)]
    (job,) = [j for j in rota.store.reads.jobs() if j.scheduled_at == START + 5 * MINUTE]
    assert (job.schedule, job.max_attempts) == ("demo_task", 4)


def test_define_task_and_runtime_schedules(
    make_rota: Callable[..., Rota], clock: FakeClock
) -> None:
    rota = make_rota()
    ran: list[str] = []

    def tick() -> None:
        ran.append("demoTask")

    @rota.task
    def cleanup(ctx: JobContext, scope: str) -> None:
        ran.append(f"cleanup:{scope}")

    rota.define_task(TaskDefinition(name="demoTask", cron="*/5 * * * *", handler=tick))
    assert rota.drain().succeeded == 1
    ran.clear()
    sched_id = rota.schedule("0 3 * * *", cleanup, tz="UTC", name="nightly-cleanup", args=["all"])
    assert sched_id == "nightly-cleanup"
    assert rota.schedule("0 4 * * *", cleanup, name="nightly-cleanup", args=["all"]) == sched_id
    other = make_rota()
    (status,) = [s for s in other.jobs() if s.id == sched_id]
    assert (status.cron, status.status) == ("0 4 * * *", "pending")
    assert status.next_run == datetime(2026, 3, 3, 4, 0, tzinfo=START.tzinfo)
    clock.set(datetime(2026, 3, 3, 4, 0, 30))
    rota.drain()
    assert sorted(ran) == ["cleanup:all", "demoTask"]


def test_a_minute_with_more_due_schedules_than_a_batch_enqueues_every_tick(
    rota: Rota, clock: FakeClock
) -> None:
    """250 schedules due at once are three of the scheduler's batches, in one pass."""
    for number in range(250):
        rota.define_task(TaskDefinition(name=f"t{number:03d}", cron="* * * * *", handler=noop))
    assert rota.drain().succeeded == 250
    clock.advance(MINUTE)
    assert rota.drain().succeeded == 250
    assert len(scheduled_jobs(rota)) == 500


def noop() -> None:
    """A task that does nothing."""


@pytest.mark.sqlite_only  # the checks of a definition, made before anything is written
@pytest.mark.parametrize(
    ("cron", "tz", "error", "match"),
    [
        ("61 * * * *", "UTC", InvalidCron, "minute"),
        ("0 0 * * * *", "UTC", InvalidCron, "seconds"),
        ("* * * * *", "Nowhere/City", InvalidTimezone, "Nowhere/City"),
    ],
)
def test_bad_definitions_are_refused_when_defined(
    rota: Rota, cron: str, tz: str, error: type[Exception], match: str
) -> None:
    def handler() -> None: ...

    with pytest.raises(error, match=match):
        rota.define_task(TaskDefinition(name="bad", cron=cron, tz=tz, handler=handler))
    with pytest.raises(error, match=match):
        rota.schedule(cron, "anything", tz=tz)
    assert rota.jobs() == []


def test_three_instances_enqueue_exactly_one_job_per_tick(
    make_rota: Callable[..., Rota], clock: FakeClock
) -> None:
    instances = [make_rota() for _ in range(3)]
    for instance in instances:

        @instance.task(name="every_minute", cron="* * * * *", overlap="allow")
        def every_minute(ctx: JobContext) -> None: ...

        instance._readiness.ensure_ready()
        instance._schedules.sync_code()
    fire_in_lockstep(instances, clock, 1000, MINUTE)
    ticks = [tick for _, tick in scheduled_jobs(instances[0])]
    assert len(ticks) == 1001
    assert ticks == [START + n * MINUTE for n in range(1001)]


def test_restarts_never_duplicate_and_follow_code_changes(
    make_rota: Callable[..., Rota], clock: FakeClock
) -> None:
    def build(cron: str, tz: str = "UTC", with_task: bool = True) -> Rota:
        rota = make_rota()
        if with_task:
            rota.define_task(TaskDefinition(name="report", cron=cron, tz=tz, handler=lambda: None))
        return rota

    async def start_stop(rota: Rota) -> None:
        async with rota:
            pass

    for _ in range(5):
        asyncio.run(start_stop(build("*/10 * * * *")))
        clock.advance(10 * MINUTE)
        build("*/10 * * * *").drain()
    rota = build("*/10 * * * *")
    schedules = rota.store.schedules.all()
    assert [s.name for s in schedules] == ["report"]
    ticks = [tick for _, tick in scheduled_jobs(rota)]
    assert ticks == sorted(set(ticks))
    assert len(ticks) == 5

    changed = build("0 * * * *", tz="Europe/Berlin")
    asyncio.run(start_stop(changed))
    (schedule,) = changed.store.schedules.all()
    assert (schedule.spec.cron, schedule.spec.tz) == ("0 * * * *", "Europe/Berlin")
    assert schedule.next_run_at == clock.now().replace(minute=0) + timedelta(hours=1)

    removed = build("", with_task=False)
    asyncio.run(start_stop(removed))
    (schedule,) = removed.store.schedules.all()
    assert schedule.state.value == "disabled"
    assert [s.id for s in removed.jobs()] == []

    back = build("0 * * * *", tz="Europe/Berlin")
    back.drain()
    assert back.store.schedules.get("report").state.value == "active"  # type: ignore[union-attr]


def test_missed_ticks_are_skipped_and_reported_once(
    make_rota: Callable[..., Rota], clock: FakeClock, caplog: pytest.LogCaptureFixture
) -> None:
    rota = make_rota()
    rota.define_task(TaskDefinition(name="minutely", cron="* * * * *", handler=lambda: None))
    rota.drain()
    clock.advance(timedelta(minutes=13, seconds=5))
    with caplog.at_level(logging.INFO, logger="rota"):
        result = rota.drain()
    missed = [r for r in caplog.records if getattr(r, "event", None) == "schedule.missed"]
    assert len(missed) == 1
    assert (missed[0].count, missed[0].skipped) == (12, 12)  # type: ignore[attr-defined]
    assert result.succeeded == 1, "only the tick that is on time runs"
    assert [t for _, t in scheduled_jobs(rota)] == [START, START + 13 * MINUTE]


def test_catchup_runs_the_latest_missed_ticks(
    make_rota: Callable[..., Rota], clock: FakeClock
) -> None:
    rota = make_rota(catchup_missed=True, max_missed_runs=3)
    task = TaskDefinition(name="minutely", cron="* * * * *", overlap="queue", handler=lambda: None)
    rota.define_task(task)  # "queue": the caught-up ticks run one after another
    rota.drain()
    clock.advance(timedelta(minutes=13, seconds=5))
    assert rota.drain().succeeded == 4
    assert [t for _, t in scheduled_jobs(rota)] == [START + n * MINUTE for n in (0, 10, 11, 12, 13)]


def test_pause_is_seen_by_every_instance_and_paused_ticks_never_catch_up(
    make_rota: Callable[..., Rota], clock: FakeClock
) -> None:
    def instance() -> Rota:
        rota = make_rota(catchup_missed=True, max_missed_runs=100)
        rota.define_task(TaskDefinition(name="minutely", cron="* * * * *", handler=lambda: None))
        return rota

    first, second = instance(), instance()
    first.drain()
    assert first.pause("minutely") is True
    assert first.pause("minutely") is False
    clock.advance(10 * MINUTE)
    assert second.drain().total == 0
    assert [s.status for s in second.jobs()] == ["paused"]
    assert second.resume("minutely") is True
    assert first.drain().succeeded == 1, "the tick at the moment of resuming, none missed"
    clock.advance(MINUTE)
    assert first.drain().succeeded == 1
    ticks = [START + n * MINUTE for n in (0, 10, 11)]
    assert [t for _, t in scheduled_jobs(first)] == ticks


def test_pause_and_resume_everything_and_cancel(
    make_rota: Callable[..., Rota], clock: FakeClock
) -> None:
    rota = make_rota()
    for name in ("a", "b"):
        rota.define_task(TaskDefinition(name=name, cron="* * * * *", handler=lambda: None))
    rota.drain()
    assert rota.pause() is True
    assert sorted(s.status for s in rota.jobs()) == ["paused", "paused"]
    assert rota.resume() is True
    assert rota.cancel("a") is True
    assert rota.cancel("a") is False
    clock.advance(MINUTE)
    rota.drain()
    assert [name for name, tick in scheduled_jobs(rota) if tick > START] == ["b"]
    rota.drain()
    assert {s.id: s.status for s in rota.jobs()} == {"a": "cancelled", "b": "pending"}
    with pytest.raises(ScheduleNotFound):
        rota.pause("missing")
    assert rota.cancel("missing") is False


def test_a_cancelled_schedule_stays_cancelled_when_defined_again(
    make_rota: Callable[..., Rota], clock: FakeClock
) -> None:
    """An operator's cancel outlives the code and the calls that define the schedule again:
    they update its definition, and it never ticks."""
    rota = make_rota()
    rota.define_task(TaskDefinition(name="coded", cron="* * * * *", handler=lambda: None))
    rota.schedule("* * * * *", "coded", name="runtime")
    rota.drain()
    assert rota.cancel("coded") and rota.cancel("runtime")

    restarted = make_rota()
    restarted.define_task(TaskDefinition(name="coded", cron="*/2 * * * *", handler=lambda: None))
    restarted.schedule("*/2 * * * *", "coded", name="runtime")
    clock.advance(4 * MINUTE)
    restarted.drain()

    for name in ("coded", "runtime"):
        schedule = restarted.get_schedule(name)
        assert (schedule.state, schedule.spec.cron) == ("cancelled", "*/2 * * * *")
    assert [tick for _, tick in scheduled_jobs(restarted) if tick > START] == []


def test_jobs_reports_schedules_and_active_jobs(rota: Rota, clock: FakeClock) -> None:
    @rota.task(cron="*/2 * * * *", retries=0)
    def flaky(ctx: JobContext) -> None:
        if ctx.scheduled_at and ctx.scheduled_at.minute == 2:
            raise RuntimeError("boom")

    @rota.task
    def one_off(ctx: JobContext) -> None: ...

    rota.drain()
    for _ in range(2):
        clock.advance(2 * MINUTE)
        rota.drain()
    waiting = rota.queue(one_off, delay=60)
    schedule, job = rota.jobs()
    assert (schedule.id, schedule.name, schedule.cron, schedule.status) == (
        "flaky",
        "flaky",
        "*/2 * * * *",
        "pending",
    )
    assert (schedule.runs, schedule.failures) == (3, 1)
    assert schedule.last_run == START + 4 * MINUTE
    assert schedule.next_run == START + 6 * MINUTE
    assert (job.id, job.name, job.status, job.cron) == (waiting, "one_off", "pending", None)


def test_a_runtime_schedule_cannot_take_a_code_schedules_name(rota: Rota) -> None:
    rota.define_task(TaskDefinition(name="report", cron="@daily", handler=lambda: None))
    rota.drain()
    with pytest.raises(ConfigError, match="defined in code"):
        rota.schedule("@hourly", "report")
    with sql_store(rota).engine.connect() as connection:
        table = sql_store(rota).schema.schedules
        assert connection.execute(select(func.count()).select_from(table)).scalar() == 1
