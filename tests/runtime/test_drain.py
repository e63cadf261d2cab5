"""``drain()`` is the worker's own execution path: leases renewed, cancellation seen, pools kept."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable

import pytest

from rota import JobContext, JobState, Rota
from rota.core.clock import SystemClock
from tests.helpers import eventually

LEASE = 2.0
"""Long enough that a heartbeat delayed by a loaded CI machine (four test processes on two
cores) still lands inside the lease: the test is about heartbeats running at all during a
drain, which a lapse of many leases would show, not about their latency."""


@pytest.mark.slow
def test_a_drained_job_longer_than_the_lease_is_not_rescued_by_a_running_worker(
    make_rota: Callable[..., Rota],
) -> None:
    """Without heartbeats a drained job's lease would expire and the live worker would run it
    a second time while the first run goes on."""
    runs: list[str] = []
    options = {"clock": SystemClock(), "lease_seconds": LEASE, "poll_interval": 0.1}
    drainer, live = make_rota(**options), make_rota(**options)
    for instance, name in ((drainer, "drain"), (live, "worker")):

        @instance.task(name="slow")
        def slow(ctx: JobContext, who: str = name) -> None:
            runs.append(who)
            time.sleep(LEASE * 3)

    job_id = drainer.queue("slow")

    async def scenario() -> None:
        draining = asyncio.ensure_future(asyncio.to_thread(drainer.drain))
        await eventually(lambda: drainer.job(job_id).state is JobState.RUNNING)
        async with live:  # its rescue loop looks for expired leases every poll
            result = await draining
            assert result.succeeded == 1
            await asyncio.sleep(LEASE)

    asyncio.run(scenario())
    job = drainer.job(job_id)
    assert runs == ["drain"]
    assert (job.state, job.attempt, job.errors) == (JobState.SUCCEEDED, 1, ())


@pytest.mark.slow
def test_drain_sees_a_cancel_of_a_running_job(make_rota: Callable[..., Rota]) -> None:
    """The drained handler learns of the cancel from the heartbeat, as in a worker."""
    rota = make_rota(clock=SystemClock(), lease_seconds=0.45, poll_interval=0.1)
    started = threading.Event()
    seen: list[bool] = []

    @rota.task
    def polite(ctx: JobContext) -> None:
        started.set()
        seen.append(bool(ctx.cancelled))
        seen.append(ctx.cancelled.wait(10))
        seen.append(bool(ctx.cancelled))

    job_id = rota.queue(polite)

    def cancel_once_started() -> None:
        assert started.wait(10)
        rota.cancel(job_id)

    canceller = threading.Thread(target=cancel_once_started)
    canceller.start()
    result = rota.drain()
    canceller.join()
    assert seen == [False, True, True], "truthy once, and only once, the cancel reached it"
    assert result.cancelled == 1
    assert rota.job(job_id).state is JobState.CANCELLED


def test_drain_keeps_each_queues_own_concurrency(make_rota: Callable[..., Rota]) -> None:
    rota = make_rota(queues={"default": 4, "serial": 1})
    all_four = threading.Barrier(4, timeout=10)
    serial_running = 0
    serial_peak = 0
    lock = threading.Lock()

    @rota.task(queue="serial")
    def one_at_a_time(ctx: JobContext) -> None:
        nonlocal serial_running, serial_peak
        with lock:
            serial_running += 1
            serial_peak = max(serial_peak, serial_running)
        time.sleep(0.05)
        with lock:
            serial_running -= 1

    @rota.task
    def many(ctx: JobContext) -> None:
        all_four.wait()

    for _ in range(4):
        rota.queue(one_at_a_time)
        rota.queue(many)
    # Each of the four default jobs waits until all four run at once; fewer slots break the
    # barrier and fail those jobs.
    assert rota.drain().succeeded == 8
    assert serial_peak == 1
