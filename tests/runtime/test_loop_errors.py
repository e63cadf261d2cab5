"""A worker survives what it did not expect: handlers raising anything, rows it cannot read,
loops meeting errors that are not the database's.

Any exception a handler raises is a failed attempt with its error recorded (``StopIteration``
used to leave the job ``running`` for ever: an asyncio future refuses it).  A hand-edited row
fails that job and no other.  A loop meeting an unexpected error logs it with its traceback,
backs off and carries on; if the claim loop ends anyway, the worker stops heartbeating.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, cast

import pytest
from sqlalchemy import update

from rota import JobContext, JobState, Rota
from rota.observe.events import EventLog
from rota.runtime.worker import Worker
from rota.runtime.worker.executor import Executor
from rota.runtime.worker.scheduler import Scheduler, SchedulerSettings
from rota.runtime.worker.settings import Pool, WorkerSettings
from rota.store.base import Store
from rota.testing import VirtualClock
from tests.conftest import Database
from tests.helpers import eventually, hand_built, sql_store

START = datetime(2026, 3, 2, 9, 0, 30, tzinfo=timezone.utc)


class Wedged(BaseException):
    """Neither an ``Exception`` nor one of the two the event loop re-raises."""


def sync_stop(ctx: JobContext) -> None:
    raise StopIteration("no more")


def sync_base(ctx: JobContext) -> None:
    raise Wedged("wedged")


def sync_exit(ctx: JobContext) -> None:
    raise SystemExit(3)


async def async_base(ctx: JobContext) -> None:
    raise Wedged("wedged")


async def async_stop(ctx: JobContext) -> None:
    raise StopIteration("no more")  # Python turns it into a RuntimeError in a coroutine


@pytest.mark.parametrize(
    ("handler", "error_type"),
    [
        (sync_stop, "builtins.StopIteration"),
        (sync_base, f"{__name__}.Wedged"),
        (sync_exit, "builtins.SystemExit"),
        (async_base, f"{__name__}.Wedged"),
        (async_stop, "builtins.RuntimeError"),
    ],
)
def test_whatever_a_handler_raises_is_a_recorded_failure(
    make_rota: Callable[..., Rota], handler: Callable[..., Any], error_type: str
) -> None:
    rota = make_rota()
    rota.task(retries=0)(handler)
    job_id = rota.queue(handler)
    result = rota.drain()
    job = rota.job(job_id)
    assert (result.failed, job.state, job.lease_until) == (1, JobState.FAILED, None)
    (error,) = job.errors
    assert error.worker is not None and error.worker == job.lease_owner
    assert (error.code, error.type, error.attempt) == ("EXECUTION_FAILED", error_type, 1)
    assert handler.__name__ in error.traceback, "the handler's own frame is in the traceback"


def hand_edit(rota: Rota, job_id: int, **values: object) -> None:
    """Write a column as an operator's UPDATE would, past every check rota makes."""
    store = sql_store(rota)
    jobs = store.schema.jobs
    with store.engine.begin() as connection:
        connection.execute(update(jobs).where(jobs.c.id == job_id).values(**values))


def unreadable_rows(rota: Rota, backend: str) -> tuple[list[int], list[int]]:
    """Queue good jobs and bad ones; return both id lists.  Only SQLite stores a priority
    that is not a number (the servers refuse it)."""

    @rota.task(retries=2)
    def fine(ctx: JobContext) -> None:
        pass

    good = [rota.queue(fine) for _ in range(3)]
    bad = [rota.queue(fine)]
    hand_edit(rota, bad[0], errors="{not json")
    if backend == "sqlite":
        bad.append(rota.queue(fine))
        hand_edit(rota, bad[1], priority="high")
    return good, bad


def assert_failed_unreadable(rota: Rota, bad: list[int]) -> None:
    for job_id in bad:
        job = rota.job(job_id)
        assert job.state is JobState.FAILED, "not retried: no attempt would read it better"
        (error,) = job.errors
        assert error.code == "INVALID_ARGUMENTS"
        assert "cannot be read" in error.message or "not an integer" in error.message
    edited = rota.job(bad[0]).errors[0].message
    assert "{not json" in edited, "the text that could not be read is quoted, not lost"


def test_an_unreadable_row_fails_alone_in_drain(
    make_rota: Callable[..., Rota], db: Database
) -> None:
    rota = make_rota()
    good, bad = unreadable_rows(rota, db.backend)
    result = rota.drain()
    assert (result.succeeded, result.failed) == (len(good), len(bad))
    assert_failed_unreadable(rota, bad)


def test_the_claim_loop_of_a_started_worker_passes_an_unreadable_row(
    make_rota: Callable[..., Rota], db: Database
) -> None:
    rota = make_rota(poll_interval=0.05)
    good, bad = unreadable_rows(rota, db.backend)

    async def scenario() -> None:
        async with rota:
            await eventually(lambda: all(rota.job(i).state.is_final for i in good + bad))
            later = rota.queue("fine")
            await eventually(lambda: rota.job(later).state is JobState.SUCCEEDED)

    asyncio.run(scenario())
    assert {rota.job(i).state for i in good} == {JobState.SUCCEEDED}
    assert_failed_unreadable(rota, bad)


class Failing:
    """A store whose ``method`` (a sub-store's, as ``"jobs.claim"``) raises ``error`` while
    ``failures`` lasts; the rest is real."""

    def __init__(self, store: object, method: str, error: BaseException, failures: int) -> None:
        self._store = store
        self._path = method.split(".")
        self._error = error
        self.failures = failures
        self.calls = 0

    def _call(self, *args: Any) -> Any:
        self.calls += 1
        if self.failures:
            self.failures -= 1
            raise self._error
        target: Any = self._store
        for name in self._path:
            target = getattr(target, name)
        return target(*args)

    def __getattr__(self, name: str) -> Any:
        if name != self._path[0]:
            return getattr(self._store, name)
        if len(self._path) == 1:
            return self._call
        return Part(getattr(self._store, name), self._path[1], self._call)


class Part:
    """A sub-store whose ``method`` is ``call``."""

    def __init__(self, part: object, method: str, call: Callable[..., Any]) -> None:
        self._part, self._method, self._call = part, method, call

    def __getattr__(self, name: str) -> Any:
        return self._call if name == self._method else getattr(self._part, name)


@pytest.fixture
def virtual(tmp_path: Path) -> Iterator[tuple[Rota, VirtualClock, ThreadPoolExecutor]]:
    clock = VirtualClock(START)
    rota = Rota(f"sqlite:///{tmp_path}/rota.db", clock=clock, poll_interval=1.0)
    rota._readiness.ensure_ready()
    threads = ThreadPoolExecutor(4)
    yield rota, clock, threads
    threads.shutdown(wait=True)
    rota.store.dispose()


def worker_on(
    rota: Rota, clock: VirtualClock, threads: ThreadPoolExecutor, store: object
) -> Worker:
    executor = Executor(rota.registry, clock, threads)
    settings = WorkerSettings(pools=(Pool(("default",), 2),), poll_interval=1.0, lease_seconds=30)
    return hand_built(rota, executor, settings, cast(Store, store))


def advancing(clock: VirtualClock, check: Callable[[], bool]) -> Callable[[], bool]:
    """``check``, after moving virtual time on by a second at each look, so that back-offs and
    intervals pass (one begun just after an advance needs the next)."""

    def look() -> bool:
        clock.advance(1.0)
        return check()

    return look


def assert_loop_errors(caplog: pytest.LogCaptureFixture, count: int, loop: str) -> None:
    """``count`` unexpected errors of ``loop`` were logged, each with its traceback."""
    logged = [r for r in caplog.records if getattr(r, "event", None) == "worker.loop_error"]
    assert len(logged) == count
    assert all(f"error in {loop}" in r.getMessage() for r in logged)
    assert all(r.exc_info and r.exc_info[0] is ZeroDivisionError for r in logged)


def test_the_claim_loop_logs_an_unexpected_error_backs_off_and_claims_again(
    virtual: tuple[Rota, VirtualClock, ThreadPoolExecutor], caplog: pytest.LogCaptureFixture
) -> None:
    rota, clock, threads = virtual

    @rota.task
    async def noop(ctx: JobContext) -> None:
        pass

    store = Failing(rota.store, "jobs.claim", ZeroDivisionError("a bug in a claim"), failures=3)

    async def scenario() -> None:
        worker = worker_on(rota, clock, threads, store)
        await worker.start()
        job_id = rota.queue(noop)
        await eventually(lambda: store.failures == 0 or bool(clock.deadlines()))
        while store.failures:  # each failure backs off: 0.2, 0.4, 0.8 virtual seconds
            await eventually(lambda: bool(clock.deadlines()))
            clock.advance(1.0)
            await asyncio.sleep(0.01)
        # The last back-off may begin after the advance just before it.
        await eventually(advancing(clock, lambda: rota.job(job_id).state is JobState.SUCCEEDED))
        assert not worker.dead.is_set()
        await worker.stop(grace=0)

    with caplog.at_level(logging.ERROR, logger="rota.worker"):
        asyncio.run(scenario())
    assert_loop_errors(caplog, 3, "claim loop")


LOOP_CALLS = [
    ("heartbeat", "jobs.heartbeat"),
    ("prune", "cluster.acquire_lease"),
    ("report", "jobs.complete"),
]


@pytest.mark.parametrize(("loop", "method"), LOOP_CALLS)
def test_every_other_loop_logs_an_unexpected_error_backs_off_and_carries_on(
    virtual: tuple[Rota, VirtualClock, ThreadPoolExecutor],
    caplog: pytest.LogCaptureFixture,
    loop: str,
    method: str,
) -> None:
    """The heartbeat, prune and report loops meet a bug in their store call twice: each time
    it is logged with its traceback and the loop tries again after a back-off, and the worker
    goes on running jobs."""
    rota, clock, threads = virtual

    @rota.task
    async def noop(ctx: JobContext) -> None:
        pass

    store = Failing(rota.store, method, ZeroDivisionError(f"a bug in {method}"), failures=2)

    async def scenario() -> None:
        worker = worker_on(rota, clock, threads, store)
        await worker.start()
        job_id = rota.queue(noop)
        await eventually(advancing(clock, lambda: store.calls > 2))
        await eventually(advancing(clock, lambda: rota.job(job_id).state is JobState.SUCCEEDED))
        assert not worker.dead.is_set()
        await worker.stop(grace=0)

    with caplog.at_level(logging.ERROR, logger="rota.worker"):
        asyncio.run(scenario())
    assert_loop_errors(caplog, 2, f"{loop} loop")


def test_the_scheduler_loop_logs_an_unexpected_error_backs_off_and_fires_the_next_tick(
    virtual: tuple[Rota, VirtualClock, ThreadPoolExecutor], caplog: pytest.LogCaptureFixture
) -> None:
    rota, clock, _ = virtual

    @rota.task(cron="* * * * *")
    async def minutely(ctx: JobContext) -> None:
        pass

    rota._schedules.sync_code()
    failing = Failing(rota.store.schedules, "next_due", ZeroDivisionError("a bug"), failures=2)
    scheduler = Scheduler(
        failing,
        rota.registry,
        clock,
        EventLog(),
        SchedulerSettings(poll_interval=1.0),
        asyncio.to_thread,
        lambda: None,
    )

    async def scenario() -> None:
        scheduler.start()
        await eventually(advancing(clock, lambda: bool(rota.counts().by_task.get("minutely"))))
        await scheduler.stop()

    with caplog.at_level(logging.ERROR, logger="rota.worker"):
        asyncio.run(scenario())
    assert_loop_errors(caplog, 2, "scheduler loop")
    assert failing.calls > 2


def test_a_claim_loop_that_ends_stops_the_heartbeat_and_marks_the_worker_dead(
    virtual: tuple[Rota, VirtualClock, ThreadPoolExecutor], caplog: pytest.LogCaptureFixture
) -> None:
    rota, clock, threads = virtual
    store = Failing(rota.store, "jobs.claim", Wedged("the claim loop cannot go on"), failures=1)

    @rota.task
    async def noop(ctx: JobContext) -> None:
        pass

    async def scenario() -> None:
        worker = worker_on(rota, clock, threads, store)
        await worker.start()
        await eventually(worker.dead.is_set)
        (registered,) = rota.store.cluster.workers(START)
        clock.advance(60)  # six heartbeat intervals: none is written
        await asyncio.sleep(0.2)
        (after,) = rota.store.cluster.workers(START)
        assert after.heartbeat_at == registered.heartbeat_at
        await worker.stop(grace=0)

    with caplog.at_level(logging.CRITICAL, logger="rota.worker"):
        asyncio.run(scenario())
    (died,) = [r for r in caplog.records if getattr(r, "event", None) == "worker.claim_loop_died"]
    assert died.exc_info is not None and died.exc_info[0] is Wedged
