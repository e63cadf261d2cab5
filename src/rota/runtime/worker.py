"""The worker: claim due jobs up to the free slots, run them, report in batches, keep leases.

Four loops share one process: *claim* (adaptive polling, woken early by a freed slot or a local
enqueue), *report* (writes finished attempts in one transaction per batch), *heartbeat* (renews
leases, notices cancellations) and *rescue* (returns jobs of dead workers to ``pending``).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import socket
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any, TypeVar

from rota.core.model import Job, WorkerInfo
from rota.core.transitions import Transition, lease_until
from rota.errors import StoreError
from rota.observe.events import EventLog
from rota.runtime.executor import CANCEL, SHUTDOWN, Executor
from rota.runtime.maintenance import Retention, prune_if_leased, rescue_expired
from rota.store.base import Store

T = TypeVar("T")
FINAL_REPORT_ATTEMPTS = 8
logger = logging.getLogger("rota.worker")


@dataclass(frozen=True)
class Pool:
    """Queues that share ``limit`` concurrent jobs; a queue with its own limit is a pool."""

    queues: tuple[str, ...]
    limit: int


@dataclass(frozen=True)
class WorkerSettings:
    pools: tuple[Pool, ...]
    poll_interval: float = 0.5
    lease_seconds: float = 30.0
    busy_poll: float = 0.05
    rescue_batch: int = 100
    prune_interval: float = 60.0
    retention: Retention = field(default_factory=Retention)
    max_backoff: float = 30.0

    @property
    def queues(self) -> tuple[str, ...]:
        return tuple(queue for pool in self.pools for queue in pool.queues)

    @property
    def concurrency(self) -> int:
        return sum(pool.limit for pool in self.pools)

    @property
    def heartbeat_interval(self) -> float:
        return self.lease_seconds / 3


@dataclass
class Running:
    job: Job
    interrupt: asyncio.Future[str]
    pool: int
    task: asyncio.Task[None] | None = None
    """Held so the event loop, which keeps only weak references to tasks, cannot drop it."""


@dataclass
class Backoff:
    """Doubling delay after consecutive database errors, reset by a success."""

    limit: float
    failures: int = 0
    loop_name: str = field(default="")

    def failed(self, error: StoreError) -> float:
        self.failures += 1
        delay = min(self.limit, 0.1 * 2.0**self.failures)
        logger.warning(
            "database error in %s loop (%s: %s); retrying in %.1f s",
            self.loop_name,
            error.code,
            error,
            delay,
            extra={"event": "worker.db_error", "error_code": error.code},
        )
        return delay

    def succeeded(self) -> None:
        if self.failures:
            logger.info(
                "database calls of the %s loop work again after %d failure(s)",
                self.loop_name,
                self.failures,
                extra={"event": "worker.db_recovered"},
            )
            self.failures = 0


class Worker:
    def __init__(
        self,
        store: Store,
        executor: Executor,
        settings: WorkerSettings,
        events: EventLog,
        db_call: Callable[..., Awaitable[Any]],
    ) -> None:
        self.store = store
        self.executor = executor
        self.settings = settings
        self.events = events
        self._db = db_call
        self.clock = executor.clock
        self.id = f"{socket.gethostname()[:40]}:{os.getpid()}:{uuid.uuid4().hex[:8]}"
        self._running: dict[int, Running] = {}
        self._busy = [0] * len(settings.pools)
        self._unreported: list[Transition] = []
        self._wake = asyncio.Event()
        self._report_wake = asyncio.Event()
        self._stopping = asyncio.Event()
        self._settled = asyncio.Event()
        self._loops: list[asyncio.Task[None]] = []
        self._claim_loop: asyncio.Task[None] | None = None
        self._report_loop: asyncio.Task[None] | None = None
        self._closing = False
        self._grace_over = False

    @property
    def tasks(self) -> list[str]:
        return self.executor.registry.names()

    def notify(self) -> None:
        """A job was queued in this process: look for work now instead of at the next poll."""
        self._wake.set()

    async def start(self) -> None:
        now = self.clock.now()
        info = WorkerInfo(
            id=self.id,
            host=socket.gethostname(),
            pid=os.getpid(),
            queues=self.settings.queues,
            tasks=tuple(self.tasks),
            task_queues={task.name: task.queue for task in self.executor.registry},
            concurrency=self.settings.concurrency,
            started_at=now,
            heartbeat_at=now,
        )
        await self._db(self.store.register_worker, info)
        self.events.emit(
            "worker.started",
            worker=self.id,
            queues=",".join(info.queues),
            concurrency=info.concurrency,
        )
        self._claim_loop = asyncio.create_task(self._claiming(), name="rota-claim")
        self._report_loop = asyncio.create_task(self._reporting(), name="rota-report")
        self._loops = [
            asyncio.create_task(self._heartbeating(), name="rota-heartbeat"),
            asyncio.create_task(self._rescuing(), name="rota-rescue"),
            asyncio.create_task(self._pruning(), name="rota-prune"),
        ]

    async def stop(self, grace: float) -> None:
        """Stop claiming, give running jobs ``grace`` seconds, release the rest unspent."""
        self._stopping.set()
        self._wake.set()
        if self._claim_loop is not None:
            await self._claim_loop
        await self._until_settled(grace)
        for run in list(self._running.values()):
            if not run.interrupt.done():
                run.interrupt.set_result(SHUTDOWN)
        await self._until_settled(None)
        self._closing = True
        self._report_wake.set()
        if self._report_loop is not None:
            await self._report_loop
        for loop in self._loops:
            loop.cancel()
        await asyncio.gather(*self._loops, return_exceptions=True)
        with contextlib.suppress(StoreError):
            await self._db(self.store.unregister_worker, self.id)
        self.events.emit("worker.stopped", worker=self.id)

    def end_grace(self) -> None:
        """Interrupt running jobs now, as the end of ``stop``'s grace would (a second SIGTERM)."""
        self._grace_over = True
        self._settled.set()

    async def _until_settled(self, timeout: float | None) -> None:
        """Wait until every running attempt has an outcome (a stuck thread may still run)."""
        loop = asyncio.get_running_loop()
        deadline = None if timeout is None else loop.time() + timeout
        while self._running:
            self._settled.clear()
            remaining = None if deadline is None else deadline - loop.time()
            if remaining is not None and (remaining <= 0 or self._grace_over):
                return
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(self._settled.wait(), remaining)

    async def _claiming(self) -> None:
        """Poll every ``busy_poll`` while claims find work, doubling up to ``poll_interval``
        while they find none; with no free slot, wait for one."""
        backoff = Backoff(self.settings.max_backoff, loop_name="claim")
        idle_wait = self.settings.busy_poll
        while not self._stopping.is_set():
            wait: float | None = None
            open_pools = [
                (index, pool.limit - self._busy[index])
                for index, pool in enumerate(self.settings.pools)
                if self._busy[index] < pool.limit
            ]
            if open_pools:
                claimed = 0
                try:
                    for index, free in open_pools:
                        jobs = await self._claim(self.settings.pools[index].queues, free)
                        for job in jobs:
                            self._launch(job, index)
                        claimed += len(jobs)
                    backoff.succeeded()
                except StoreError as error:
                    idle_wait = backoff.failed(error)
                if claimed:
                    wait = idle_wait = self.settings.busy_poll
                else:
                    wait, idle_wait = idle_wait, min(self.settings.poll_interval, idle_wait * 2)
            self._wake.clear()
            if self._stopping.is_set():
                return
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(self._wake.wait(), wait)

    async def _claim(self, queues: tuple[str, ...], limit: int) -> list[Job]:
        now = self.clock.now()
        until = lease_until(now, self.settings.lease_seconds)
        claimed: list[Job] = await self._db(
            self.store.claim, self.id, queues, self.tasks, limit, now, until
        )
        return claimed

    def _launch(self, job: Job, pool: int) -> None:
        run = Running(job, asyncio.get_running_loop().create_future(), pool)
        self._running[job.id] = run
        self._busy[pool] += 1
        run.task = asyncio.create_task(self._execute(run), name=f"rota-job-{job.id}")

    async def _execute(self, run: Running) -> None:
        try:
            finished = await self.executor.run(run.job, run.interrupt)
        except Exception:
            logger.exception("internal error running job %d; its lease will expire", run.job.id)
            finished = None
        try:
            if finished is None:
                return
            self._unreported.append(finished.transition)
            self._report_wake.set()
            del self._running[run.job.id]
            self._settled.set()
            if finished.leftover is not None:
                with contextlib.suppress(BaseException):
                    await finished.leftover
        finally:
            if self._running.pop(run.job.id, None) is not None:
                self._settled.set()
            self._busy[run.pool] -= 1
            if self._busy[run.pool] <= self.settings.pools[run.pool].limit // 2:
                self._wake.set()

    async def _reporting(self) -> None:
        """The only writer of finished attempts; on stop it writes what is left, then ends."""
        backoff = Backoff(self.settings.max_backoff, loop_name="report")
        while True:
            await self._report_wake.wait()
            self._report_wake.clear()
            try:
                await self._flush()
                backoff.succeeded()
            except StoreError as error:
                delay = backoff.failed(error)
                if self._closing and backoff.failures >= FINAL_REPORT_ATTEMPTS:
                    logger.error(
                        "giving up reporting %d finished job(s); their leases will expire and "
                        "they will run again",
                        len(self._unreported),
                        extra={"event": "worker.report_abandoned"},
                    )
                    return
                await asyncio.sleep(min(delay, 2.0) if self._closing else delay)
                self._report_wake.set()
                continue
            if self._closing and not self._unreported:
                return

    async def _flush(self) -> None:
        batch, self._unreported = self._unreported, []
        if not batch:
            return
        try:
            applied = await self._db(self.store.complete, self.id, batch, self.clock.now())
        except BaseException:
            self._unreported[:0] = batch
            raise
        if applied < len(batch):
            logger.warning(
                "%d of %d finished jobs were no longer held by this worker (lease expired?)",
                len(batch) - applied,
                len(batch),
                extra={"event": "worker.lost_jobs"},
            )

    async def _heartbeating(self) -> None:
        backoff = Backoff(self.settings.max_backoff, loop_name="heartbeat")
        while True:
            delay = self.settings.heartbeat_interval
            try:
                await self._heartbeat()
                backoff.succeeded()
            except StoreError as error:
                delay = min(delay, backoff.failed(error))
            await asyncio.sleep(delay)

    async def _heartbeat(self) -> None:
        held = sorted({*self._running, *(t.job_id for t in self._unreported)})
        now = self.clock.now()
        until = lease_until(now, self.settings.lease_seconds)
        cancel, lost = await self._db(self.store.heartbeat, self.id, held, now, until)
        for job_id in cancel:
            self._interrupt(job_id, CANCEL)
        for job_id in lost:
            self._interrupt(job_id, SHUTDOWN)
            if job_id in self._running:
                self.events.job("job.lost", self._running[job_id].job, logging.WARNING)

    def _interrupt(self, job_id: int, reason: str) -> None:
        run = self._running.get(job_id)
        if run is not None and not run.interrupt.done():
            run.interrupt.set_result(reason)

    async def _rescuing(self) -> None:
        backoff = Backoff(self.settings.max_backoff, loop_name="rescue")
        while True:
            delay = self.settings.poll_interval
            try:
                rescued = await self._db(
                    rescue_expired,
                    self.store,
                    self.executor,
                    self.events,
                    self.clock.now(),
                    self.settings.rescue_batch,
                )
                backoff.succeeded()
                if rescued:
                    self._wake.set()
            except StoreError as error:
                delay = backoff.failed(error)
            await asyncio.sleep(delay)

    async def _pruning(self) -> None:
        backoff = Backoff(self.settings.max_backoff, loop_name="prune")
        interval = self.settings.prune_interval
        while True:
            delay = interval
            try:
                now = self.clock.now()
                pruned = await self._db(
                    prune_if_leased,
                    self.store,
                    self.id,
                    self.settings.retention,
                    now,
                    timedelta(seconds=interval * 2),
                )
                if pruned:
                    self.events.emit("jobs.pruned", count=pruned)
                backoff.succeeded()
            except StoreError as error:
                delay = backoff.failed(error)
            await asyncio.sleep(delay)
