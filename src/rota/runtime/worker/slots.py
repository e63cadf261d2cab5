"""A worker's slots: the attempts it runs, by pool, and the waits of a stop.

Each pool of queues has ``limit`` slots; a claimed job takes one until its handler has ended
(a thread that ignored its interruption keeps it, so no more is claimed than can run).  A job
claimed again while this process still runs its previous attempt (its lease ran out meanwhile)
waits here for that handler to stop, never beside it.  ``stop`` waits on them: for the running
attempts to settle within the grace, then for interrupted handlers to show they stopped;
``abandon`` ends the last wait (what has not stopped by then is left to its lease).
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

from rota.core.model import Job
from rota.runtime.timer import Timer
from rota.runtime.worker.executor import Interrupt
from rota.runtime.worker.settings import Pool


@dataclass
class Running:
    job: Job
    interrupt: asyncio.Future[Interrupt]
    pool: int
    task: asyncio.Task[None] | None = None
    """Held so the event loop, which keeps only weak references to tasks, cannot drop it."""
    span: Any = None


class Slots:
    def __init__(self, pools: tuple[Pool, ...], timer: Timer) -> None:
        self.pools = pools
        self.timer = timer
        self.running: dict[int, Running] = {}
        self.busy = [0] * len(pools)
        self._waiting: dict[int, tuple[Job, int]] = {}
        self._settled = asyncio.Event()
        self._abandon = asyncio.Event()
        self._grace_over = False

    def has_free(self) -> bool:
        return any(busy < pool.limit for busy, pool in zip(self.busy, self.pools, strict=True))

    def free(self, pool: int) -> int:
        return self.pools[pool].limit - self.busy[pool]

    def take(self, job: Job, pool: int) -> bool:
        """Take a slot of ``pool`` for ``job``; whether it may start now (``False``: it waits
        for its previous attempt here, ``release`` hands it back then)."""
        self.busy[pool] += 1
        if job.id in self.running:
            self._waiting[job.id] = (job, pool)
            return False
        return True

    def release(self, run: Running) -> tuple[Job, int] | None:
        """``run``'s handler has ended: free its slot; the job claimed again meanwhile, if any,
        with its pool, to start now (its slot is handed back to be taken again)."""
        if self.running.pop(run.job.id, None) is not None:
            self._settled.set()
        self.busy[run.pool] -= 1
        waiting = self._waiting.pop(run.job.id, None)
        if waiting is not None:
            self.busy[waiting[1]] -= 1
        return waiting

    def half_free(self, pool: int) -> bool:
        return self.busy[pool] <= self.pools[pool].limit // 2

    def interrupt_all(self, reason: Interrupt) -> None:
        for run in list(self.running.values()):
            if not run.interrupt.done():
                run.interrupt.set_result(reason)

    def end_grace(self) -> None:
        """End a stop's grace now (a second SIGTERM)."""
        self._grace_over = True
        self._settled.set()

    def abandon(self) -> None:
        """Stop waiting for interrupted handlers to show they stopped."""
        self._abandon.set()

    async def until_settled(self, timeout: float | None, ends_with_grace: bool = False) -> None:
        """Wait until every running attempt has an outcome (a stuck thread may still run)."""
        deadline = self.timer.after(timeout) if timeout is not None else None
        try:
            while self.running:
                if deadline is not None and (
                    deadline.done() or (ends_with_grace and self._grace_over)
                ):
                    return
                self._settled.clear()
                settled = asyncio.ensure_future(self._settled.wait())
                await asyncio.wait(
                    {settled, *([deadline] if deadline else [])}, return_when="FIRST_COMPLETED"
                )
                settled.cancel()
        finally:
            if deadline is not None:
                deadline.cancel()

    async def stopped(self, handler: asyncio.Future[Any]) -> bool:
        """Whether an interrupted handler has really stopped; its slot stays taken until then.

        A job going back to ``pending`` (a retry after a timeout, a release at shutdown) is
        reported only then: until then it stays ``running`` under this worker's lease, so no
        other worker runs it at the same time (invariant 3).  At shutdown, a handler still
        running once the interruption's short wait is over is abandoned: its job is not
        released, and is recovered by lease expiry after this process has gone, as after a
        SIGKILL.  A final outcome (failed, cancelled) is reported at once: nothing runs it again.
        """
        abandon = asyncio.ensure_future(self._abandon.wait())
        try:
            await asyncio.wait({handler, abandon}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            abandon.cancel()
        return handler.done()
