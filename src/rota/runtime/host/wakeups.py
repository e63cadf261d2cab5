"""Wake-ups from local calls: a job queued or resumed in this process, a schedule changed, is
seen by this process's worker and scheduler at once instead of at their next poll.

``Wakeups`` knows them while the host runs them; ``ProcessGate`` is what the services call
(``runtime.common.Gate``): the database made ready first, this process woken after.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Protocol

from rota.runtime.services.readiness import Readiness


class Wakeable(Protocol):
    def notify(self) -> None: ...


class WakeableScheduler(Protocol):
    def wake(self) -> None: ...


class Wakeups:
    def __init__(self) -> None:
        self._loop: asyncio.AbstractEventLoop | None = None
        self._worker: Wakeable | None = None
        self._scheduler: WakeableScheduler | None = None

    def attach(
        self,
        loop: asyncio.AbstractEventLoop,
        worker: Wakeable | None,
        scheduler: WakeableScheduler | None,
    ) -> None:
        self._loop, self._worker, self._scheduler = loop, worker, scheduler

    def detach(self) -> None:
        self._loop = self._worker = self._scheduler = None

    def worker(self) -> None:
        """A job was queued or resumed here: let this process's worker look at once."""
        worker, loop = self._worker, self._loop
        if worker is None or loop is None or loop.is_closed():
            return
        try:
            running = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        if running is loop:
            worker.notify()
        else:
            loop.call_soon_threadsafe(worker.notify)

    def scheduler(self) -> None:
        scheduler, loop = self._scheduler, self._loop
        if scheduler is not None and loop is not None and not loop.is_closed():
            loop.call_soon_threadsafe(scheduler.wake)


@dataclass(frozen=True)
class ProcessGate:
    readiness: Readiness
    wakeups: Wakeups

    def ensure_ready(self) -> None:
        self.readiness.ensure_ready()

    def wake_worker(self) -> None:
        self.wakeups.worker()

    def wake_scheduler(self) -> None:
        self.wakeups.scheduler()
