"""The worker's background loops besides claiming: heartbeat, rescue and prune.

*heartbeat* renews the leases of the jobs this worker holds, writes the progress their
handlers reported, and learns which of them someone asked to cancel or took away; *rescue*
returns jobs of dead workers to ``pending``; *prune* deletes old finished jobs while this
worker holds the prune lease.  Each logs a database error, backs off and carries on; so does
one meeting any other error, logged with its traceback.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable
from datetime import timedelta
from typing import Any

from rota.core.model import ProgressReport
from rota.core.transitions import lease_until
from rota.observe.events import EventLog
from rota.runtime.alerts import TickAlerts
from rota.runtime.backoff import LoopBackoff
from rota.runtime.executor import CANCEL, SHUTDOWN, Executor
from rota.runtime.maintenance import Retention, prune_if_leased, rescue_expired
from rota.runtime.timer import Timer
from rota.store.base import Store

DbCall = Callable[..., Awaitable[Any]]


class Upkeep:
    def __init__(
        self,
        worker_id: str,
        store: Store,
        executor: Executor,
        events: EventLog,
        db_call: DbCall,
        timer: Timer,
        lease_seconds: float,
        max_backoff: float,
        alerts: TickAlerts | None = None,
    ) -> None:
        self.worker_id = worker_id
        self.alerts = alerts
        self.store = store
        self.executor = executor
        self.events = events
        self._db = db_call
        self.timer = timer
        self.lease_seconds = lease_seconds
        self.max_backoff = max_backoff

    async def heartbeating(
        self, held: Callable[[], Iterable[int]], interrupt: Callable[[int, str], None]
    ) -> None:
        """Every third of the lease: renew it for the ids ``held()`` gives, write the progress
        their handlers reported since the last time, and ``interrupt`` those whose cancel was
        asked (``CANCEL``) or whose lease another worker took (``SHUTDOWN``).  Progress a
        failed heartbeat did not write goes back to the board for the next one."""
        backoff = LoopBackoff("heartbeat", self.max_backoff)
        board = self.executor.progress
        while True:
            delay = self.lease_seconds / 3
            progress: list[ProgressReport] = []
            try:
                job_ids = sorted(held())
                progress = board.take(job_ids)
                now = self.executor.clock.now()
                until = lease_until(now, self.lease_seconds)
                cancel, lost = await self._db(
                    self.store.heartbeat, self.worker_id, job_ids, now, until, progress
                )
                for job_id in cancel:
                    interrupt(job_id, CANCEL)
                for job_id in lost:
                    interrupt(job_id, SHUTDOWN)
                backoff.succeeded()
            except Exception as error:
                board.put_back(progress)
                delay = min(delay, backoff.failed(error))
            await self.timer.sleep(delay)

    async def rescuing(self, poll_interval: float, batch: int, rescued: Callable[[], None]) -> None:
        backoff = LoopBackoff("rescue", self.max_backoff)
        while True:
            delay = poll_interval
            try:
                if await self.rescue_once(batch):
                    rescued()
                backoff.succeeded()
            except Exception as error:
                delay = backoff.failed(error)
            await self.timer.sleep(delay)

    async def rescue_once(self, batch: int) -> int:
        now = self.executor.clock.now()
        count: int = await self._db(
            rescue_expired, self.store, self.executor, self.events, now, batch, self.alerts
        )
        return count

    async def pruning(self, interval: float, retention: Retention) -> None:
        backoff = LoopBackoff("prune", self.max_backoff)
        while True:
            delay = interval
            try:
                now = self.executor.clock.now()
                pruned = await self._db(
                    prune_if_leased,
                    self.store,
                    self.worker_id,
                    retention,
                    now,
                    timedelta(seconds=interval * 2),
                )
                if pruned:
                    self.events.emit("jobs.pruned", count=pruned)
                backoff.succeeded()
            except Exception as error:
                delay = backoff.failed(error)
            await self.timer.sleep(delay)
