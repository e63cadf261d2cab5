"""Where the runtime waits: polls, heartbeats, back-offs, timeouts and grace periods.

Every wait goes through a ``Timer`` made from the instance's clock. With a real clock it waits
on the event loop; with a clock that has an ``async sleep(seconds)`` (``rota.testing.
VirtualClock``) it waits for that clock's time instead, so a test moves a running worker
through hours of leases, retries and ticks by advancing the clock, without sleeping.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Awaitable, Callable
from typing import Any

from rota.core.clock import Clock


class Timer:
    def __init__(self, clock: Clock) -> None:
        sleep = getattr(clock, "sleep", None)
        self._sleep: Callable[[float], Awaitable[Any]] = (
            sleep if inspect.iscoroutinefunction(sleep) else asyncio.sleep
        )

    @property
    def virtual(self) -> bool:
        return self._sleep is not asyncio.sleep

    async def sleep(self, seconds: float) -> None:
        await self._sleep(max(seconds, 0.0))

    def after(self, seconds: float) -> asyncio.Future[Any]:
        """A future done once ``seconds`` have passed; cancel it when no longer needed."""
        return asyncio.ensure_future(self.sleep(seconds))

    async def wait(self, event: asyncio.Event, seconds: float | None) -> bool:
        """Wait for ``event`` at most ``seconds`` (``None``: for ever); whether it was set."""
        if event.is_set():
            return True
        waiter = asyncio.ensure_future(event.wait())
        timer = self.after(seconds) if seconds is not None else None
        try:
            await asyncio.wait({waiter, *([timer] if timer else [])}, return_when="FIRST_COMPLETED")
        finally:
            pending = [f for f in (waiter, timer) if f is not None and not f.done()]
            for future in pending:
                future.cancel()
            if pending:
                # Wait for them to end (a virtual sleep leaves the clock's list), but never
                # swallow a cancellation of this task that arrives meanwhile, as awaiting each
                # with CancelledError suppressed would: the task would wait on, uncancellable.
                await asyncio.wait(pending)
        return event.is_set()
