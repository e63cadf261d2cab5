"""The Worker, Scheduler and Executor driven directly by a ``VirtualClock``, below the façade.

Hours of leases, heartbeats, timeouts, retries, ticks and grace periods pass in milliseconds:
the runtime's every wait follows the clock, so a test advances it instead of sleeping.  They run
on SQLite: the store is the real one (the Store contract suite covers every backend), and the
runtime is what is under test here.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from functools import partial
from pathlib import Path

import pytest

from rota import JobContext, JobState, Rota
from rota.core.model import Job
from rota.core.transitions import lease_until
from rota.errors import ErrorCode
from rota.observe.events import EventLog
from rota.runtime.worker import Worker
from rota.runtime.worker.executor import Executor
from rota.runtime.worker.scheduler import Scheduler, SchedulerSettings
from rota.runtime.worker.settings import Pool, WorkerSettings
from rota.testing import VirtualClock
from tests.helpers import eventually, hand_built

START = datetime(2026, 3, 2, 9, 0, 30, tzinfo=timezone.utc)
LEASE = 30.0


@dataclass
class Parts:
    rota: Rota
    clock: VirtualClock
    threads: ThreadPoolExecutor

    def worker(self, lease: float = LEASE) -> Worker:
        """A worker whose every wait follows the virtual clock.  Advancing the clock by more
        than a heartbeat at once skips heartbeats, as a frozen process would: a test that
        jumps far gives the worker a lease longer than the jump."""
        executor = Executor(self.rota.registry, self.clock, self.threads)
        settings = WorkerSettings(
            pools=(Pool(("default",), 2),), poll_interval=1.0, lease_seconds=lease
        )
        return hand_built(self.rota, executor, settings)

    def job(self, job_id: int) -> Job:
        found = self.rota.store.reads.job(job_id)
        assert found is not None
        return found


@pytest.fixture
def parts(tmp_path: Path) -> Iterator[Parts]:
    clock = VirtualClock(START)
    rota = Rota(f"sqlite:///{tmp_path}/rota.db", clock=clock, poll_interval=1.0)
    rota._readiness.ensure_ready()
    threads = ThreadPoolExecutor(4)
    yield Parts(rota, clock, threads)
    threads.shutdown(wait=True)
    rota.store.dispose()


async def advance(clock: VirtualClock, seconds: float, check: Callable[[], object]) -> None:
    """Move the clock on, then let the woken loops do their database work (real time)."""
    clock.advance(seconds)
    await eventually(check, timeout=15)


def leased_until(parts: Parts, job_id: int, until: datetime) -> bool:
    return parts.job(job_id).lease_until == until


async def waiting(clock: VirtualClock, seconds: float) -> None:
    """Until a loop sleeps for ``seconds`` from now: a wait it must start before the clock moves
    past it, or the advance would not wake it."""
    due = clock.now() + timedelta(seconds=seconds)
    await eventually(lambda: due in clock.deadlines(), timeout=15)


TIMED_LOOPS = 4
"""A started worker's loops that sleep on the clock: claim, heartbeat, rescue and prune."""


async def asleep(clock: VirtualClock) -> None:
    """Until every timed loop sleeps: none is half-way through a poll begun at the old time."""
    await eventually(lambda: sum(d > clock.now() for d in clock.deadlines()) >= TIMED_LOOPS)


def test_heartbeats_keep_a_long_job_leased_for_ten_lease_periods(parts: Parts) -> None:
    release = asyncio.Event()

    @parts.rota.task
    async def long(ctx: JobContext) -> None:
        await release.wait()

    async def scenario() -> None:
        worker = parts.worker()
        await worker.start()
        job_id = parts.rota.queue(long)
        worker.notify()
        await eventually(lambda: parts.job(job_id).state is JobState.RUNNING)
        for _ in range(30):  # 300 virtual seconds: ten leases, thirty heartbeats
            await asleep(parts.clock)  # no loop half-way through work begun at the old time
            await waiting(parts.clock, LEASE / 3)
            renewed = lease_until(parts.clock.now() + timedelta(seconds=LEASE / 3), LEASE)
            await advance(parts.clock, LEASE / 3, partial(leased_until, parts, job_id, renewed))
        assert parts.rota.store.jobs.expired_leases(parts.clock.now(), 10) == []
        release.set()
        await eventually(lambda: parts.job(job_id).state is JobState.SUCCEEDED)
        job = parts.job(job_id)
        assert (job.attempt, job.errors) == (1, ())
        await worker.stop(grace=0)

    asyncio.run(scenario())


def test_a_timeout_of_an_hour_and_its_retry_pass_in_virtual_time(parts: Parts) -> None:
    attempts: list[int] = []

    @parts.rota.task(timeout=3600, retries=1, retry_delay=600)
    async def hangs(ctx: JobContext) -> None:
        attempts.append(ctx.attempt)
        if ctx.attempt == 1:
            await asyncio.Event().wait()

    async def scenario() -> None:
        worker = parts.worker(lease=7200)
        await worker.start()
        job_id = parts.rota.queue(hangs)
        worker.notify()
        await eventually(lambda: attempts == [1])
        await waiting(parts.clock, 3600)
        await advance(parts.clock, 3599, lambda: parts.job(job_id).state is JobState.RUNNING)
        await advance(parts.clock, 1, lambda: parts.job(job_id).state is JobState.PENDING)
        job = parts.job(job_id)
        assert [error.code for error in job.errors] == ["TIMEOUT"]
        retry_in = (job.run_at - parts.clock.now()).total_seconds()
        assert 450 <= retry_in <= 600, "the back-off, jittered by up to 25 %"
        await asleep(parts.clock)  # else a look begun before the advance would miss the job
        # A microsecond past: the float of retry_in, rounded back to microseconds, may fall
        # just short of run_at, and the job would not yet be due.
        due = retry_in + 1e-6
        await advance(parts.clock, due, lambda: parts.job(job_id).state is JobState.SUCCEEDED)
        assert attempts == [1, 2]
        await worker.stop(grace=0)

    asyncio.run(scenario())


def test_a_dead_workers_job_is_rescued_once_its_lease_expires(parts: Parts) -> None:
    ran: list[int] = []

    @parts.rota.task
    async def work(ctx: JobContext) -> None:
        ran.append(ctx.attempt)

    async def scenario() -> None:
        job_id = parts.rota.queue(work)
        now = parts.clock.now()
        (claimed,) = parts.rota.store.jobs.claim(
            "dead-worker", ["default"], ["work"], 1, now, lease_until(now, LEASE)
        )
        worker = parts.worker()
        await worker.start()
        await waiting(parts.clock, 1.0)  # the rescue loop's poll
        await advance(parts.clock, LEASE - 1, lambda: parts.job(job_id).state is JobState.RUNNING)
        assert ran == []
        await waiting(parts.clock, 1.0)
        await advance(parts.clock, 2, lambda: parts.job(job_id).state is JobState.SUCCEEDED)
        assert ran == [2]
        assert [error.code for error in parts.job(job_id).errors] == [ErrorCode.LEASE_EXPIRED]
        assert claimed.id == job_id
        await worker.stop(grace=0)

    asyncio.run(scenario())


def test_the_grace_period_of_a_stop_is_virtual_too(parts: Parts) -> None:
    @parts.rota.task
    async def endless(ctx: JobContext) -> None:
        await asyncio.Event().wait()

    async def scenario() -> None:
        worker = parts.worker()
        await worker.start()
        job_id = parts.rota.queue(endless)
        worker.notify()
        await eventually(lambda: parts.job(job_id).state is JobState.RUNNING)
        stopping = asyncio.create_task(worker.stop(grace=120))
        grace_ends = parts.clock.now() + timedelta(seconds=120)
        await eventually(lambda: grace_ends in parts.clock.deadlines())
        for _ in range(11):  # in heartbeat steps: the lease stays live through the grace
            await waiting(parts.clock, LEASE / 3)
            await advance(parts.clock, LEASE / 3, lambda: not stopping.done())
        assert parts.job(job_id).state is JobState.RUNNING
        await waiting(parts.clock, LEASE / 3)
        await advance(parts.clock, LEASE / 3, stopping.done)
        job = parts.job(job_id)
        assert (job.state, job.attempt) == (JobState.PENDING, 0), "released, attempt given back"

    asyncio.run(scenario())


def ran_and_recorded(parts: Parts, ticks: list[datetime | None], expected: list[datetime]) -> bool:
    return ticks == expected and not parts.rota.store.reads.jobs([JobState.RUNNING], limit=None)


SCHEDULER_POLL = 0.7
"""Unlike the worker's poll (1 s), so that ``waiting`` sees the scheduler itself asleep."""


def test_the_scheduler_fires_each_hourly_tick_as_the_clock_reaches_it(parts: Parts) -> None:
    ticks: list[datetime | None] = []

    @parts.rota.task(cron="0 * * * *")
    async def hourly(ctx: JobContext) -> None:
        ticks.append(ctx.scheduled_at)

    async def scenario() -> None:
        parts.rota._schedules.sync_code()
        worker = parts.worker()
        await worker.start()
        scheduler = Scheduler(
            parts.rota.store.schedules,
            parts.rota.registry,
            parts.clock,
            EventLog(),
            SchedulerSettings(poll_interval=SCHEDULER_POLL),
            asyncio.to_thread,
            worker.notify,
        )
        scheduler.start()
        top = START.replace(minute=0, second=0)
        for hour in range(1, 6):
            await asleep(parts.clock)
            await waiting(parts.clock, SCHEDULER_POLL)
            expected = [top + timedelta(hours=n) for n in range(1, hour + 1)]
            # and its job recorded: an hour's jump with a job still running expires its lease
            await advance(parts.clock, 3600, partial(ran_and_recorded, parts, ticks, expected))
        await scheduler.stop()
        await worker.stop(grace=0)

    asyncio.run(scenario())
