"""The worker loop in-process on every backend: concurrency, timeouts, cancellation, failures."""

from __future__ import annotations

import asyncio
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

import pytest

from rota import JobContext, Rota
from rota.testing import FakeClock
from tests.helpers import eventually


def state(rota: Rota, job_id: int) -> str:
    return rota.job(job_id).state.value


def test_failed_attempts_are_recorded_and_exhaustion_fails_the_job(
    rota: Rota, clock: FakeClock
) -> None:
    @rota.task(retries=2, retry_delay=10)
    def flaky(ctx: JobContext) -> None:
        raise ValueError(f"attempt {ctx.attempt} broke")

    job_id = rota.queue(flaky)
    assert rota.drain().retried == 1
    first_retry_at = rota.job(job_id).run_at
    assert 7.5 <= (first_retry_at - clock.now()).total_seconds() <= 10
    assert rota.drain().total == 0, "the back-off has not elapsed"
    clock.advance(10)
    assert rota.drain().retried == 1
    clock.advance(20)
    assert rota.drain().failed == 1
    job = rota.job(job_id)
    assert (job.state.value, job.attempt) == ("failed", 3)
    assert [e.attempt for e in job.errors] == [1, 2, 3]
    last = job.errors[-1]
    assert (last.code, last.type, last.message) == (
        "EXECUTION_FAILED",
        "builtins.ValueError",
        "attempt 3 broke",
    )
    assert 'raise ValueError(f"attempt {ctx.attempt} broke")' in last.traceback
    clock.advance(3600)
    assert rota.drain().total == 0, "a failed job stays failed"


def test_a_stored_traceback_starts_at_the_handlers_frame(rota: Rota) -> None:
    """What called the handler is rota's, the same every time: the traceback leaves it out."""

    @rota.task(retries=0)
    def broken(ctx: JobContext) -> None:
        raise ValueError("sync")

    @rota.task(retries=0)
    async def broken_async(ctx: JobContext) -> None:
        raise ValueError("async")

    jobs = {rota.queue(broken): "broken", rota.queue(broken_async): "broken_async"}
    assert rota.drain().failed == 2
    for job_id, handler in jobs.items():
        lines = rota.job(job_id).errors[-1].traceback.splitlines()
        assert lines[0] == "Traceback (most recent call last):", lines
        assert lines[1].startswith(f'  File "{__file__}", line '), lines
        assert lines[1].endswith(f", in {handler}"), lines
        assert lines[-1].startswith("ValueError: "), lines


def test_manual_retry_gives_a_fresh_budget_and_keeps_history(rota: Rota) -> None:
    attempts: list[int] = []

    @rota.task(retries=0)
    def once(ctx: JobContext) -> None:
        attempts.append(ctx.attempt)
        if len(attempts) == 1:
            raise RuntimeError("first run fails")

    job_id = rota.queue(once)
    assert rota.drain().failed == 1
    assert rota.retry(job_id) is True
    assert rota.drain().succeeded == 1
    job = rota.job(job_id)
    assert attempts == [1, 1]
    assert (job.state.value, len(job.errors)) == ("succeeded", 1)
    assert rota.retry(job_id) is False


@pytest.mark.slow
def test_never_more_handlers_than_concurrency(make_rota: Callable[..., Rota]) -> None:
    rota = make_rota(concurrency=3)
    current = peak = 0
    lock = threading.Lock()

    @rota.task
    async def slow_async(ctx: JobContext) -> None:
        nonlocal current, peak
        with lock:
            current += 1
            peak = max(peak, current)
        await asyncio.sleep(0.01)
        with lock:
            current -= 1

    @rota.task
    def slow_sync(ctx: JobContext) -> None:
        nonlocal current, peak
        with lock:
            current += 1
            peak = max(peak, current)
        time.sleep(0.01)
        with lock:
            current -= 1

    ids = [rota.queue(slow_async if n % 2 else slow_sync) for n in range(40)]

    async def scenario() -> None:
        async with rota:
            await eventually(lambda: all(state(rota, i) == "succeeded" for i in ids), 30)

    asyncio.run(scenario())
    assert peak == 3


def test_database_work_never_runs_on_the_event_loop(rota: Rota) -> None:
    loop_threads: set[int] = set()
    callers: set[int] = set()
    store = rota.store
    spied = [(store.jobs, name) for name in ("claim", "complete", "heartbeat", "expired_leases")]
    for part, name in [*spied, (store.cluster, "register_worker")]:
        original = getattr(part, name)

        def spy(*args: Any, _original: Any = original, **kwargs: Any) -> Any:
            callers.add(threading.get_ident())
            return _original(*args, **kwargs)

        setattr(part, name, spy)

    @rota.task
    async def noop(ctx: JobContext) -> None:
        loop_threads.add(threading.get_ident())

    ids = [rota.queue(noop) for _ in range(20)]

    async def scenario() -> None:
        async with rota:
            await eventually(lambda: all(state(rota, i) == "succeeded" for i in ids))

    asyncio.run(scenario())
    assert callers and loop_threads
    assert not callers & loop_threads


def run_until_final(
    rota: Rota, job_ids: list[int], during: Callable[[], None] | None = None
) -> None:
    async def scenario() -> None:
        async with rota:
            if during is not None:
                await asyncio.to_thread(during)
            await eventually(lambda: all(rota.job(i).state.is_final for i in job_ids), timeout=20)

    asyncio.run(scenario())


@pytest.mark.slow
def test_async_timeout_cancels_the_handler(make_rota: Callable[..., Rota]) -> None:
    rota = make_rota(lease_seconds=1.5)
    cancelled = threading.Event()

    @rota.task(timeout=0.2, retries=0)
    async def hang(ctx: JobContext) -> None:
        try:
            await asyncio.sleep(60)
        except asyncio.CancelledError:
            cancelled.set()
            raise

    job_id = rota.queue(hang)
    run_until_final(rota, [job_id])
    job = rota.job(job_id)
    assert job.state.value == "failed"
    assert job.errors[-1].code == "TIMEOUT"
    assert cancelled.is_set()


@pytest.mark.slow
def test_sync_timeout_sets_cancelled_and_retries(make_rota: Callable[..., Rota]) -> None:
    rota = make_rota(lease_seconds=1.5)
    saw_cancel: list[int] = []

    @rota.task(timeout=0.2, retries=1, retry_delay=0)
    def stubborn(ctx: JobContext) -> None:
        if ctx.cancelled.wait(10):
            saw_cancel.append(ctx.attempt)

    job_id = rota.queue(stubborn)
    run_until_final(rota, [job_id])
    job = rota.job(job_id)
    assert (job.state.value, job.attempt) == ("failed", 2)
    assert [e.code for e in job.errors] == ["TIMEOUT", "TIMEOUT"]
    assert sorted(saw_cancel) == [1, 2]


@pytest.mark.parametrize("kind", ["async", "sync"])
@pytest.mark.slow
def test_cancel_a_running_job(make_rota: Callable[..., Rota], kind: str) -> None:
    rota = make_rota(lease_seconds=0.6)
    started = threading.Event()

    @rota.task(name="long_async")
    async def long_async(ctx: JobContext) -> None:
        started.set()
        await asyncio.sleep(60)

    @rota.task(name="long_sync")
    def long_sync(ctx: JobContext) -> None:
        started.set()
        ctx.cancelled.wait(60)

    job_id = rota.queue(f"long_{kind}")

    def cancel_once_started() -> None:
        assert started.wait(10)
        assert rota.cancel(job_id) is True

    run_until_final(rota, [job_id], during=cancel_once_started)
    job = rota.job(job_id)
    assert (job.state.value, job.errors) == ("cancelled", ())


@pytest.mark.slow
def test_misbehaving_handlers_never_kill_the_worker(make_rota: Callable[..., Rota]) -> None:
    rota = make_rota(lease_seconds=1.5)

    @rota.task(retries=0)
    async def exits_async(ctx: JobContext) -> None:
        sys.exit(3)

    @rota.task(retries=0)
    def exits_sync(ctx: JobContext) -> None:
        raise SystemExit("bye")

    @rota.task(retries=0)
    def interrupts(ctx: JobContext) -> None:
        raise KeyboardInterrupt

    @rota.task(retries=0)
    def raises(ctx: JobContext) -> None:
        raise LookupError("nope")

    @rota.task(retries=0, timeout=0.1)
    async def hangs(ctx: JobContext) -> None:
        await asyncio.Event().wait()

    @rota.task
    def fine(ctx: JobContext) -> None: ...

    bad = [rota.queue(t) for t in (exits_async, exits_sync, interrupts, raises, hangs)]
    good = rota.queue(fine)
    run_until_final(rota, [*bad, good])
    assert rota.job(good).state.value == "succeeded"
    types = [rota.job(i).errors[-1].type for i in bad]
    assert types == [
        "builtins.SystemExit",
        "builtins.SystemExit",
        "builtins.KeyboardInterrupt",
        "builtins.LookupError",
        "rota.errors.JobTimeout",
    ]
    assert all(rota.job(i).state.value == "failed" for i in bad)


def test_worker_registers_with_a_heartbeat_and_leaves_on_stop(rota: Rota, clock: FakeClock) -> None:
    @rota.task(queue="mail")
    def mail(ctx: JobContext) -> None: ...

    async def scenario() -> None:
        async with rota:
            workers = rota.store.cluster.workers(clock.now())
            assert len(workers) == 1
            worker = workers[0]
            import os
            import socket

            assert (worker.host, worker.pid) == (socket.gethostname(), os.getpid())
            assert set(worker.queues) == {"default", "mail"}
            assert worker.tasks == ("mail",)
            assert worker.heartbeat_at == clock.now()
        assert rota.store.cluster.workers(clock.now()) == []

    asyncio.run(scenario())


@pytest.mark.slow
def test_a_stuck_sync_handler_keeps_its_slot_until_its_thread_returns(
    make_rota: Callable[..., Rota],
) -> None:
    rota = make_rota(concurrency=1, lease_seconds=1.5)
    release = threading.Event()

    @rota.task(timeout=0.1, retries=0)
    def ignores_cancel(ctx: JobContext) -> None:
        release.wait(20)

    @rota.task
    def next_one(ctx: JobContext) -> None: ...

    stuck = rota.queue(ignores_cancel)
    waiting = rota.queue(next_one)

    async def scenario() -> None:
        async with rota:
            await eventually(lambda: rota.job(stuck).state.value == "failed")
            await asyncio.sleep(0.3)  # several polls: the only slot is still taken
            assert rota.job(waiting).state.value == "pending"
            release.set()
            await eventually(lambda: rota.job(waiting).state.value == "succeeded")

    asyncio.run(scenario())
    assert rota.job(stuck).errors[-1].code == "TIMEOUT"
