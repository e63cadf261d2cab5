"""``Timer.wait`` ends on the event or the timeout, and a cancellation of the waiting task is
never lost: a loop stopped by cancelling it (the rescue, the prune) must end, whenever the
cancel arrives (a lost one left ``Worker.stop`` waiting for ever on a gather of its loops)."""

from __future__ import annotations

import asyncio

import pytest

from rota.core.clock import SystemClock
from rota.runtime.timer import Timer


@pytest.mark.parametrize("turns", range(6))
def test_a_cancel_arriving_as_the_event_fires_is_never_swallowed(turns: int) -> None:
    async def scenario() -> None:
        event, timer = asyncio.Event(), Timer(SystemClock())
        task = asyncio.create_task(timer.wait(event, 60))
        await asyncio.sleep(0)
        event.set()
        for _ in range(turns):  # each turn, one step further through the wait's clean-up
            await asyncio.sleep(0)
        finished = task.done()
        task.cancel()
        if finished:
            assert await task is True
        else:
            with pytest.raises(asyncio.CancelledError):
                await task

    asyncio.run(scenario())


def test_the_wait_ends_on_its_timeout_or_its_event() -> None:
    async def scenario() -> tuple[bool, bool]:
        event, timer = asyncio.Event(), Timer(SystemClock())
        timed_out = await timer.wait(event, 0.01)
        asyncio.get_running_loop().call_later(0.01, event.set)
        return timed_out, await timer.wait(event, 60)

    assert asyncio.run(scenario()) == (False, True)
