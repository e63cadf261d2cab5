"""Helpers for testing code that uses rota: fake clocks; ``Rota.drain()`` runs due jobs.

``FakeClock`` moves only when told to; a worker started with it still polls and times out in
real time.  ``VirtualClock`` also drives the worker's own waits (polls, heartbeats, timeouts,
grace), so a test of a running worker advances minutes without sleeping.
"""

from __future__ import annotations

import asyncio
import threading
from datetime import datetime, timedelta

from rota.core.clock import Clock, FakeClock, SystemClock

__all__ = ["Clock", "FakeClock", "SystemClock", "VirtualClock"]


class VirtualClock(FakeClock):
    """A ``FakeClock`` whose ``sleep`` ends when the clock has been advanced far enough.

    >>> clock = VirtualClock(datetime(2026, 1, 1, tzinfo=timezone.utc))
    >>> async with Rota(url, clock=clock):   # the worker's timers now follow the clock
    ...     clock.advance(60)                # one minute of polls and heartbeats, at once
    """

    def __init__(self, start: datetime | None = None) -> None:
        super().__init__(start)
        self._lock = threading.Lock()
        self._sleepers: list[tuple[datetime, asyncio.AbstractEventLoop, asyncio.Future[None]]]
        self._sleepers = []

    async def sleep(self, seconds: float) -> None:
        """Return once the clock reads ``seconds`` later than now (at least one loop turn)."""
        await asyncio.sleep(0)
        if seconds <= 0:
            return
        loop = asyncio.get_running_loop()
        future: asyncio.Future[None] = loop.create_future()
        sleeper = (self.now() + timedelta(seconds=seconds), loop, future)
        with self._lock:
            self._sleepers.append(sleeper)
        try:
            await future
        finally:
            with self._lock:
                if sleeper in self._sleepers:
                    self._sleepers.remove(sleeper)

    def deadlines(self) -> list[datetime]:
        """When the sleeps waiting on this clock end, soonest first: a test can wait until the
        runtime waits (for a grace period, a timeout, a back-off) before it advances."""
        with self._lock:
            return sorted(deadline for deadline, _, _ in self._sleepers)

    def advance(self, delta: float | timedelta) -> None:
        super().advance(delta)
        self._wake_due()

    def set(self, moment: datetime) -> None:
        super().set(moment)
        self._wake_due()

    def _wake_due(self) -> None:
        now = self.now()
        with self._lock:
            due = [sleeper for sleeper in self._sleepers if sleeper[0] <= now]
        for _, loop, future in due:
            if not loop.is_closed():
                loop.call_soon_threadsafe(_resolve, future)


def _resolve(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)
