"""The lease keeper's watch of the worker's event loop names a block of that loop, and not the
end of a worker whose keeper outlives its ``stop`` by a renewal in flight.

Real time on purpose: what is watched is how long a real loop runs nothing."""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections.abc import Callable, Iterator

import pytest

from rota.observe.events import EventLog
from rota.runtime.worker.leases import _watch

pytestmark = pytest.mark.slow
HOLD = 1.6
"""Seconds a loop is held by a blocking call, beyond the watch's one-second bound."""


@pytest.fixture
def worker_loop() -> Iterator[asyncio.AbstractEventLoop]:
    """A worker's event loop, running in a thread of its own."""
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    yield loop
    loop.call_soon_threadsafe(loop.stop)
    thread.join(5)
    loop.close()


def blocks(caplog: pytest.LogCaptureFixture) -> list[logging.LogRecord]:
    return [r for r in caplog.records if getattr(r, "event", None) == "worker.loop_blocked"]


async def watch_while(
    worker: asyncio.AbstractEventLoop, stopping: Callable[[], bool] = lambda: False
) -> None:
    """Watch ``worker`` for three seconds."""
    watching = asyncio.ensure_future(_watch(worker, 0, EventLog(), stopping))
    await asyncio.sleep(3)
    watching.cancel()
    await asyncio.gather(watching, return_exceptions=True)


def test_a_worker_loop_held_by_a_blocking_call_is_logged(
    worker_loop: asyncio.AbstractEventLoop, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, "rota.worker")
    worker_loop.call_soon_threadsafe(time.sleep, HOLD)

    asyncio.run(watch_while(worker_loop))

    assert len(blocks(caplog)) == 1


def test_the_loop_of_a_stopped_worker_is_no_block_once_the_keeper_stops(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, "rota.worker")
    stopped = asyncio.new_event_loop()  # open, but nothing runs it any more
    try:
        asyncio.run(watch_while(stopped, stopping=lambda: True))
        assert blocks(caplog) == []
        asyncio.run(watch_while(stopped))
        assert len(blocks(caplog)) == 1
    finally:
        stopped.close()
