"""Hooks cannot hurt the worker (DESIGN, "Events and hooks").

Sync hooks run off the event loop, in order per job; one slower than ``hook_timeout`` is
abandoned and its lane goes on; whatever a hook raises, ``BaseException`` included, is logged and
contained; a full lane drops calls with a counted warning instead of blocking.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections.abc import Callable

import pytest

from rota import JobContext, JobState, Rota
from rota.observe import hooks
from rota.observe.events import Event
from rota.observe.hooks import HookRunner
from tests.helpers import eventually, wait_until

pytestmark = pytest.mark.sqlite_only


def test_one_jobs_events_reach_a_sync_hook_in_order(make_rota: Callable[..., Rota]) -> None:
    rota = make_rota(concurrency=4)
    heard: list[tuple[int, str]] = []

    @rota.task
    def work(ctx: JobContext) -> None: ...

    def hook(event: Event) -> None:
        assert event.job_id is not None
        time.sleep(0.001)  # a hook that takes a moment: others may be queued meanwhile
        heard.append((event.job_id, event.name))

    rota.on("job.started", hook)
    rota.on("job.succeeded", hook)
    ids = [rota.queue(work) for _ in range(20)]
    assert rota.drain().succeeded == 20
    wait_until(lambda: len(heard) == 40)
    for job_id in ids:
        assert [name for heard_id, name in heard if heard_id == job_id] == [
            "job.started",
            "job.succeeded",
        ]


@pytest.mark.parametrize(
    "raised", [KeyboardInterrupt, SystemExit, asyncio.CancelledError, RuntimeError]
)
def test_whatever_a_hook_raises_is_logged_and_contained(
    make_rota: Callable[..., Rota], caplog: pytest.LogCaptureFixture, raised: type[BaseException]
) -> None:
    rota = make_rota()
    async_ran = threading.Event()

    @rota.task
    def work(ctx: JobContext) -> None: ...

    def sync_hook(event: Event) -> None:
        raise raised("from a sync hook")

    async def async_hook(event: Event) -> None:
        async_ran.set()
        raise raised("from an async hook")

    rota.on("job.succeeded", sync_hook)
    rota.on("job.succeeded", async_hook)
    job_id = rota.queue(work)

    async def scenario() -> None:
        async with rota:
            await eventually(lambda: rota.job(job_id).state is JobState.SUCCEEDED)
            await eventually(async_ran.is_set)
            await eventually(lambda: caplog.text.count("a hook for job.succeeded raised") >= 2)
            again = rota.queue(work)  # the worker and its loop go on
            await eventually(lambda: rota.job(again).state is JobState.SUCCEEDED)

    with caplog.at_level(logging.ERROR, logger="rota.hooks"):
        asyncio.run(asyncio.wait_for(scenario(), 20))  # and stop() does not hang
    assert rota.job(job_id).state is JobState.SUCCEEDED


def test_a_blocking_sync_hook_does_not_stall_the_worker(make_rota: Callable[..., Rota]) -> None:
    rota = make_rota(concurrency=2)
    release = threading.Event()

    @rota.task
    def work(ctx: JobContext) -> None: ...

    def wait_for_release(event: Event) -> None:
        release.wait(30)

    rota.on("job.succeeded", wait_for_release)
    ids = [rota.queue(work) for _ in range(6)]

    async def scenario() -> None:
        async with rota:
            await eventually(
                lambda: all(rota.job(n).state is JobState.SUCCEEDED for n in ids), timeout=15
            )
            release.set()

    try:
        asyncio.run(asyncio.wait_for(scenario(), 30))
    finally:
        release.set()


def test_a_hook_past_its_timeout_is_abandoned_and_its_lane_goes_on(
    caplog: pytest.LogCaptureFixture,
) -> None:
    runner = HookRunner(timeout=5.0)
    stuck, after = threading.Event(), threading.Event()
    runner.submit(1, "job.succeeded", lambda: stuck.wait(30))
    runner.submit(1, "job.failed", after.set)  # the same job: the same lane, behind it
    wait_until(lambda: runner._lanes[1 % hooks.LANES].running is not None)
    assert not after.is_set()
    assert runner.abandon_overdue(time.monotonic()) == [], "not yet past the timeout"
    with caplog.at_level(logging.WARNING, logger="rota.hooks"):
        assert runner.abandon_overdue(time.monotonic() + 5.0) == ["job.succeeded"]
    assert after.wait(10), "the lane went on with a new thread"
    assert "ran longer than hook_timeout (5 s): abandoned" in caplog.text
    stuck.set()


def test_a_full_lane_drops_calls_with_a_counted_warning(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr(hooks, "CAPACITY", 3)
    runner = HookRunner(timeout=5.0)
    blocked = threading.Event()
    ran: list[int] = []
    runner.submit(0, "job.started", lambda: blocked.wait(30))
    wait_until(lambda: runner._lanes[0].running is not None)
    with caplog.at_level(logging.WARNING, logger="rota.hooks"):
        for n in range(5):  # the lane holds three waiting calls
            runner.submit(0, "job.started", lambda n=n: ran.append(n))  # type: ignore[misc]
    assert runner.dropped == 2
    assert "1 call(s) dropped so far" in caplog.text
    blocked.set()
    wait_until(lambda: ran == [0, 1, 2])
