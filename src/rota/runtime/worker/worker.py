"""The worker: claim due jobs up to the free slots, run them, complete them in batches.

One execution path serves ``Rota.start()`` and ``Rota.drain()``: *claim* (adaptive polling,
woken early by a freed slot or a local enqueue) launches jobs into per-pool slots, each attempt
runs in the executor, which decides its transition, and the completer (``worker.completer``)
writes finished attempts in one transaction per batch and then announces what applied.  The
lease keeper (``worker.leases``) renews the leases from a thread of its own and hands back the
jobs to cancel or lost; the housekeeping loops rescue and prune; ``worker.slots`` holds what
runs.  ``drain`` runs the same steps without registering or polling, until none is left.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import socket
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from rota.core.backoff import doubling
from rota.core.definitions import DefinitionConflict, conflicts
from rota.core.events import EventName
from rota.core.limits import FlowLimits
from rota.core.model import DrainResult, Job, JobState
from rota.core.transitions import lease_until
from rota.errors import StoreError
from rota.observe.events import EventLog
from rota.runtime.announcer import Announcer
from rota.runtime.timeline import TimeLine
from rota.runtime.worker.alerts import TickAlerts
from rota.runtime.worker.backoff import LoopBackoff
from rota.runtime.worker.completer import Completer
from rota.runtime.worker.executor import Attempt, Executor, Interrupt
from rota.runtime.worker.housekeeping import Housekeeping
from rota.runtime.worker.leases import Holdings, LeaseKeeper
from rota.runtime.worker.listener import JobListener
from rota.runtime.worker.outlook import SharedOutlook
from rota.runtime.worker.settings import WorkerSettings
from rota.runtime.worker.slots import Running, Slots
from rota.store.base import Store
from rota.store.values import Outlook

INTERRUPTED_SETTLE = 1.0
"""Seconds an interrupted handler has, at the end of a stop's grace, to show it stopped."""
RESCUE_BATCH = 1_000
logger = logging.getLogger("rota.worker")


@dataclass(frozen=True)
class WorkerContext:
    """What a worker is given by its process: the store and the call that runs a store method
    off the event loop, the executor, its settings, the event log and the announcer of
    committed facts, and the time line its lease keeper measures."""

    store: Store
    executor: Executor
    settings: WorkerSettings
    events: EventLog
    announcer: Announcer
    db_call: Callable[..., Awaitable[Any]]
    timeline: TimeLine | None = None


class Worker:
    def __init__(self, context: WorkerContext) -> None:
        store, executor, settings = context.store, context.executor, context.settings
        self.store = store
        self.executor = executor
        self.settings = settings
        self.events = context.events
        self.announcer = context.announcer
        self._db = context.db_call
        self.clock = executor.clock
        self.timer = executor.timer
        self.id = f"{socket.gethostname()[:40]}:{os.getpid()}:{uuid.uuid4().hex[:8]}"
        self.alerts = TickAlerts(
            store.schedules, executor.registry, self.events, settings.alert_after_failures
        )
        self.shared_outlook = SharedOutlook(self.clock, settings.poll_interval)
        self.listener = JobListener(store, self.notify, settings.max_backoff, self.events)
        self._nudged = False
        self._conflicts: list[DefinitionConflict] = []
        self.housekeeping = Housekeeping(
            self.id,
            store,
            executor,
            self._db,
            settings,
            self.announcer,
            self.alerts,
            self.shared_outlook,
        )
        self.holdings = Holdings()
        self.leases = LeaseKeeper(
            self.id,
            store,
            self.clock,
            context.timeline,
            settings.lease_seconds,
            settings.max_backoff,
            self.holdings,
            executor.progress,
            self.events,
        )
        self.slots = Slots(settings.pools, self.timer)
        self._wake = asyncio.Event()
        self._stopping = asyncio.Event()
        self._loops: list[asyncio.Task[None]] = []
        self._claim_loop: asyncio.Task[None] | None = None
        self.dead = asyncio.Event()
        """Set when the claim loop ended on its own: ``rota worker`` exits non-zero, restarted."""
        self._report_loop: asyncio.Task[None] | None = None
        self.completer = Completer(
            self.id,
            store,
            self._db,
            self.clock,
            self.timer,
            settings.max_backoff,
            self.announcer,
            self.holdings,
            self.alerts,
            executor.progress,
        )
        self._draining = False
        self._abandoned: list[Job] = []

    @property
    def tasks(self) -> list[str]:
        return self.executor.registry.names()

    @property
    def limits(self) -> dict[str, FlowLimits]:
        """The flow limits of the tasks that have any, which the claim enforces."""
        return {task.name: task.limits for task in self.executor.registry if task.limits}

    def notify(self) -> None:
        """A job was queued in this process: look for work now instead of at the next poll."""
        self._nudged = True
        self._wake.set()

    async def start(self) -> None:
        await self._db(self.register)
        self.launch()

    def register(self) -> None:
        """Write this worker's row (writing it again replaces it, so a start that waits for
        the database retries it with the rest), and read how the live workers of its
        namespace define its tasks: ``launch`` reports those that differ
        (``core.definitions``)."""
        now = self.clock.now()
        self.store.cluster.register_worker(
            self.settings.describe(self.id, self.executor.registry, now)
        )
        self._conflicts = conflicts(self.store.cluster.workers(now), of=self.id)

    def launch(self) -> None:
        """Start the loops of a registered worker, on the running event loop."""
        settings = self.settings
        self.events.emit(
            EventName.WORKER_STARTED,
            worker=self.id,
            host=socket.gethostname(),
            database=settings.database,
            table_prefix=settings.table_prefix,
            namespace=settings.namespace,
            queues=",".join(settings.queues),
            concurrency=settings.concurrency,
        )
        for conflict in self._conflicts:
            fields = conflict.fields()
            self.events.emit(EventName.WORKER_DEFINITION_CONFLICT, logging.WARNING, **fields)
        self.listener.start(asyncio.get_running_loop())
        self.leases.start(self._interrupt)
        self._claim_loop = asyncio.create_task(self._claiming(), name="rota-claim")
        self._report_loop = asyncio.create_task(self.completer.writing(), name="rota-report")
        housekeeping = self.housekeeping
        rescuing = housekeeping.rescuing(
            settings.poll_interval, settings.rescue_batch, self._wake.set
        )
        pruning = housekeeping.pruning(settings.prune_interval, settings.retention)
        self._loops = [
            asyncio.create_task(rescuing, name="rota-rescue"),
            asyncio.create_task(pruning, name="rota-prune"),
        ]

    async def drain(self) -> DrainResult:
        """Run every due job, as a started worker would, until none is due and none runs.

        Expired leases' jobs are rescued first, timed-out waits woken, stuck jobs announced.
        Leases are renewed while jobs run, so a long drained job is never taken over by another
        worker.  It returns once the hooks of what it announced have run (each within
        ``hook_timeout``).  A retry whose back-off ends after ``now`` is not due: a test
        advances its clock and drains again.
        """
        self._draining = True
        self.completer.outcomes.clear()
        await self.housekeeping.rescue_once(RESCUE_BATCH)
        await self.housekeeping.stuck_once()
        self.leases.start(self._interrupt)
        try:
            while True:
                claimed = await self._claim_free()
                if claimed:
                    continue
                if self.slots.running:
                    self._wake.clear()
                    await self._wake.wait()
                elif self.completer.pending:
                    await self.completer.flush()
                else:
                    break
        finally:
            await asyncio.to_thread(self.leases.stop)
        await self.events.runner.settle()
        outcomes = self.completer.outcomes
        return DrainResult(
            succeeded=outcomes[JobState.SUCCEEDED],
            failed=outcomes[JobState.FAILED],
            retried=outcomes[JobState.PENDING],
            cancelled=outcomes[JobState.CANCELLED],
            waiting=outcomes[JobState.WAITING],
        )

    async def stop(self, grace: float) -> None:
        """Stop claiming, give running jobs ``grace`` seconds, then interrupt the rest: those
        whose handler stops are released with the attempt given back, the others abandoned."""
        self._stopping.set()
        self._wake.set()
        self.listener.stop()
        if self._claim_loop is not None:
            await self._claim_loop
        await self.slots.until_settled(grace, ends_with_grace=True)
        self.slots.interrupt_all(Interrupt.SHUTDOWN)
        await self.slots.until_settled(INTERRUPTED_SETTLE)
        self.slots.abandon()
        await self.slots.until_settled(None)
        if self._abandoned:
            self.events.log(
                logger,
                EventName.WORKER_ABANDONED,
                logging.WARNING,
                "%d handler(s) did not stop when interrupted (jobs %s): their jobs stay leased "
                "and run again elsewhere once the lease expires",
                len(self._abandoned),
                ", ".join(str(job.id) for job in self._abandoned),
                jobs=[j.id for j in self._abandoned],
            )
        self.completer.close()
        if self._report_loop is not None:
            await self._report_loop
        for loop in self._loops:
            loop.cancel()
        await asyncio.gather(*self._loops, return_exceptions=True)
        await asyncio.to_thread(self.leases.stop)
        with contextlib.suppress(StoreError):
            await self._db(self.store.cluster.unregister_worker, self.id)
        self.events.emit(EventName.WORKER_STOPPED, worker=self.id)

    def end_grace(self) -> None:
        """Interrupt running jobs now, as the end of ``stop``'s grace would (a second SIGTERM)."""
        self.slots.end_grace()

    async def _claiming(self) -> None:
        """The claim loop, which ends only at ``stop``; if it cannot go on, the worker dies.

        An error of one claim is logged and backed off from (``LoopBackoff``), but something
        else may still end the loop (a ``BaseException``, a bug outside the claim).  A worker
        that claims nothing while it heartbeats would look healthy for ever, so it then stops
        heartbeating (``rota check`` and the dashboard see it dead; its jobs' leases expire
        and are rescued) and sets ``dead``.
        """
        try:
            await self._claim_until_stopped()
        except BaseException as error:
            self._died(error)
            return
        if not self._stopping.is_set():
            self._died(None)

    def _died(self, error: BaseException | None) -> None:
        self.events.log(
            logger,
            EventName.WORKER_CLAIM_LOOP_DIED,
            logging.CRITICAL,
            "the claim loop ended (%s): this worker claims no more jobs and stops heartbeating",
            "no error" if error is None else f"{type(error).__name__}: {error}",
            exc_info=error,
        )
        self.leases.stop(wait=False)
        self.dead.set()

    async def _claim_until_stopped(self) -> None:
        """Poll every ``busy_poll`` while claims find work, doubling up to ``poll_interval``
        while they find none (then looking before claiming, unless nudged by a local enqueue);
        with no free slot, wait for one."""
        backoff = LoopBackoff("claim", self.settings.max_backoff, self.events)
        empty = 0  # polls in a row that claimed nothing
        while not self._stopping.is_set():
            self._wake.clear()  # before the look: a wake-up during it is not lost
            wait: float | None = None
            if self.slots.has_free():
                error_wait = None
                try:
                    idle = empty > 0 and not self._nudged
                    self._nudged = False
                    worth = not idle or await self._work_in_sight()
                    claimed = await self._claim_free() if worth else 0
                    backoff.succeeded()
                except Exception as error:
                    claimed, error_wait = 0, backoff.failed(error)
                empty = 0 if claimed else empty + 1
                poll = doubling(self.settings.busy_poll, self.settings.poll_interval, empty)
                wait = poll if error_wait is None else error_wait
            if self._stopping.is_set():
                return
            await self.timer.wait(self._wake, wait)

    async def _work_in_sight(self) -> bool:
        """An idle worker's one statement a poll (``worker.outlook``): claim only if it says a
        job is due; the rescue and the scheduler hear the rest."""
        look = (self.store.outlook, self.settings.queues, self.tasks, self.clock.now())
        outlook: Outlook = await self._db(*look)
        self.shared_outlook.heard(outlook)
        return outlook.jobs_due

    async def _claim_free(self) -> int:
        """Claim due jobs for every pool's free slots and launch them; how many."""
        claimed = 0
        for index, pool in enumerate(self.settings.pools):
            free = self.slots.free(index)
            if free <= 0:
                continue
            now = self.clock.now()
            until = lease_until(now, self.settings.lease_seconds)
            jobs: list[Job] = await self._db(
                self.store.jobs.claim,
                self.id,
                pool.queues,
                self.tasks,
                free,
                now,
                until,
                self.limits,
            )
            self.holdings.add(job.id for job in jobs)
            kept = await self.housekeeping.still_held(jobs, until)
            # By id: a ``Job``'s own ``==`` compares its every field, 50 times a job here.
            held = {job.id for job in kept}
            self.holdings.discard(job.id for job in jobs if job.id not in held)
            for job in kept:
                self._launch(job, index)
            claimed += len(jobs)
        return claimed

    def _launch(self, job: Job, pool: int) -> None:
        if not self.slots.take(job, pool):
            return
        run = Running(job, asyncio.get_running_loop().create_future(), pool)
        run.span = self.announcer.started(job, self.clock.now())
        self.slots.running[job.id] = run
        run.task = asyncio.create_task(self._execute(run), name=f"rota-job-{job.id}")

    async def _execute(self, run: Running) -> None:
        job = run.job
        try:
            attempt: Attempt | None = await self.executor.run(job, run.interrupt)
        except Exception:
            logger.exception("internal error running job %d; its lease will expire", job.id)
            attempt = None
        try:
            if attempt is None:
                return
            attempt.span = run.span
            transition, leftover = attempt.transition, attempt.leftover
            if leftover is None or transition.finishes or await self.slots.stopped(leftover):
                self.completer.add(attempt)
            else:
                self._abandoned.append(job)
            if leftover is not None and transition.finishes:
                await self.slots.stopped(leftover)
        finally:
            waiting = self.slots.release(run)
            if waiting is not None:
                self._launch(*waiting)
            if self._draining or self.slots.half_free(run.pool):
                self._wake.set()

    def _interrupt(self, job_id: int, reason: Interrupt) -> None:
        """From the lease keeper: stop a job someone cancelled, or one another worker took."""
        run = self.slots.running.get(job_id)
        if run is None or run.interrupt.done():
            return
        if reason is Interrupt.SHUTDOWN:
            self.events.job(EventName.JOB_LOST, run.job, logging.WARNING)
        run.interrupt.set_result(reason)
