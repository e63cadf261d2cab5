"""The process side of a ``Rota``: reaching the database, the worker and the scheduler, their
threads, wake-ups from local calls, signals, and ``drain``.

Readiness waits out an unreachable database (``connect_timeout``, or for ever under
``run()``) and raises a refusal (wrong password, missing schema) at once.  The worker's own
database calls run on a small pool of threads so that the event loop never waits on a socket.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import signal
import threading
from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, TypeVar

from rota.config import RotaConfig
from rota.core.events import EventName
from rota.core.model import DrainResult
from rota.errors import StoreError, WorkerDied
from rota.observe.otel import Telemetry
from rota.runtime.announcer import Announcer
from rota.runtime.connect import DatabaseWait
from rota.runtime.executor import Executor
from rota.runtime.maintenance import Retention
from rota.runtime.parts import Parts
from rota.runtime.results import Completions
from rota.runtime.scheduler import Scheduler, SchedulerSettings, fire_due
from rota.runtime.settings import Pool, WorkerSettings
from rota.runtime.threads import HandlerThreads
from rota.runtime.timeline import TimeLine
from rota.runtime.worker import Worker, WorkerContext
from rota.store.urls import describe_url

T = TypeVar("T")
DB_THREADS = 3
CONNECT_READINGS = 3
logger = logging.getLogger("rota")


@dataclass(frozen=True)
class Served:
    """What one worker process serves, when its command line narrows it (``rota worker
    --queues``, ``--concurrency``); by default every queue of its tasks, at ``concurrency``."""

    queues: tuple[str, ...] = ()
    concurrency: int | None = None


class Lifecycle:
    def __init__(
        self,
        parts: Parts,
        config: RotaConfig,
        telemetry: Telemetry | None,
        sync_code: Callable[[], None],
    ) -> None:
        """``sync_code`` upserts the code's schedules (``ScheduleControl.sync_code``), at each
        start and drain."""
        self.store, self.registry, self.clock, self.events = parts
        self.config = config
        self.telemetry = telemetry
        self.sync_code = sync_code
        self._ready = False
        self._ready_lock = threading.Lock()
        self._worker: Worker | None = None
        self._scheduler: Scheduler | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._task_threads: HandlerThreads | None = None
        self._db_threads: ThreadPoolExecutor | None = None
        self._served = Served()
        self.completions = Completions()
        """Wakes this process's ``rota.result`` waiters when its worker or drain ends a job."""
        self.timeline = TimeLine(self.store, self.clock, self.events)
        self.announcer = Announcer(self.events, telemetry, self.completions)
        """Tells this process's subscribers what was committed (``runtime.announcer``)."""

    # -- readiness ---------------------------------------------------------------------------

    def ensure_ready(self) -> None:
        """Connect, retrying while unreachable until ``connect_timeout``; migrate if enabled;
        keep the clock on the server's time line (``runtime.timeline``)."""
        if not self._ready:
            self._wait_for_database(self.config.connect_timeout, self._connect_once)
        elif self.timeline.stale():
            self._measure()

    def _wait_for_database(
        self,
        timeout: float | None,
        attempt: Callable[[], None],
        stop: threading.Event | None = None,
    ) -> None:
        DatabaseWait(describe_url(self.config.url), timeout, self.events).retry(attempt, stop)

    def _connect_once(self) -> None:
        with self._ready_lock:
            if self._ready:
                return
            logger.debug("connected to %s", self.store.connect())
            if self.config.auto_migrate:
                self.store.migrate()
            else:
                self.store.require_schema()
            self._measure()
            self._ready = True

    def _measure(self) -> None:
        """Anchor the clock to the server's, from the best of a few readings (the first
        statements on a new connection can be slow); a failed reading keeps the last one."""
        with contextlib.suppress(StoreError):
            self.timeline.measure(readings=CONNECT_READINGS)

    # -- the worker --------------------------------------------------------------------------

    async def start(self, connect_timeout: float | None, served: Served | None = None) -> None:
        """Connect, sync schedules and register the worker, all retried while the database is
        unreachable; a permanent error (wrong password, missing schema) is raised at once."""
        if self._worker is not None:
            return
        self._served = served or Served()
        worker = self._new_worker()
        cancelled = threading.Event()
        try:
            prepare = functools.partial(self._prepare, worker)
            await asyncio.to_thread(self._wait_for_database, connect_timeout, prepare, cancelled)
            worker.launch()
        except BaseException:
            cancelled.set()
            await self._release_threads()
            raise
        self._worker = worker
        self._scheduler = Scheduler(
            self.store.schedules,
            self.registry,
            self.clock,
            self.events,
            self.scheduler_settings(),
            self._db_call,
            worker.notify,
            worker.lookout,
        )
        self._scheduler.start()

    def _prepare(self, worker: Worker) -> None:
        """What a worker needs of the database before its loops start, in one retried step."""
        self._connect_once()
        self.sync_code()
        worker.register()

    def _new_worker(self) -> Worker:
        self._loop = asyncio.get_running_loop()
        self.events.bind(self._loop)
        settings = self._worker_settings(self.pools(self._served))
        self._task_threads = HandlerThreads(settings.concurrency, "rota-task")
        self._db_threads = ThreadPoolExecutor(DB_THREADS, "rota-db")
        return Worker(self._context(self._executor(self._task_threads), settings, self._db_call))

    async def stop(self, grace: float, signalled: bool = False) -> None:
        """Stop the scheduler and the worker, giving running jobs ``grace`` seconds
        (``worker.stopping``; ``signalled``: by a signal, which a second one cuts short)."""
        worker, self._worker = self._worker, None
        scheduler, self._scheduler = self._scheduler, None
        if worker is None:
            return
        self.events.log(
            logger,
            EventName.WORKER_STOPPING,
            logging.INFO,
            "stopping: waiting up to %g s for running jobs%s",
            grace,
            "; send the signal again to stop now" if signalled else "",
            worker=worker.id,
            grace=grace,
        )
        if scheduler is not None:
            await scheduler.stop()
        await worker.stop(grace)
        await self._release_threads()

    async def _release_threads(self) -> None:
        if self._task_threads is not None:
            self._task_threads.shutdown()
        if self._db_threads is not None:
            # A cancelled loop's last query may still run; let it return its connection.
            await asyncio.to_thread(self._db_threads.shutdown, True)
        self._task_threads = self._db_threads = None
        self.events.bind(None)

    async def run_until_signalled(self, grace: float, served: Served) -> None:
        """Wait for the database for as long as it takes, unless a signal comes first; then
        run until a signal, or until the worker dies (``WorkerDied`` once it has stopped).

        A second signal ends the grace at once through the worker's own grace-expiry path, so
        an interrupted job ends the same either way."""
        stop = asyncio.Event()
        draining: Worker | None = None

        def on_signal() -> None:
            if stop.is_set() and draining is not None:
                self.events.log(
                    logger,
                    EventName.WORKER_GRACE_SKIPPED,
                    logging.WARNING,
                    "stopping now: interrupting running jobs without waiting for them",
                )
                draining.end_grace()
            stop.set()

        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, on_signal)
        starting = asyncio.create_task(self.start(None, served))
        stopping = asyncio.create_task(stop.wait())
        died: asyncio.Task[bool] | None = None
        try:
            await asyncio.wait({starting, stopping}, return_when=asyncio.FIRST_COMPLETED)
            if starting.done():
                starting.result()
                assert self._worker is not None
                died = asyncio.create_task(self._worker.dead.wait())
                await asyncio.wait({stopping, died}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            waits = (starting, stopping, *([died] if died else []))
            for task in waits:
                task.cancel()
            await asyncio.gather(*waits, return_exceptions=True)
            draining = self._worker
            await self.stop(grace, signalled=True)
            for sig in (signal.SIGINT, signal.SIGTERM):
                loop.remove_signal_handler(sig)
        if died is not None and died.done() and not died.cancelled():
            raise WorkerDied("the claim loop ended; see the log for why")

    # -- drain -------------------------------------------------------------------------------

    async def drain(self, queue: str | None) -> DrainResult:
        """Sync schedules, enqueue the ticks due now and run every due job, as a worker of this
        process would (``Worker.drain``)."""
        await asyncio.to_thread(self.ensure_ready)
        if self._worker is None:
            self.events.bind(asyncio.get_running_loop())
        await asyncio.to_thread(self.sync_code)
        await asyncio.to_thread(
            fire_due,
            self.store.schedules,
            self.registry,
            self.scheduler_settings(),
            self.events,
            self.clock.now(),
        )
        pools = (Pool((queue,), self.config.concurrency),) if queue else self.pools(Served())
        settings = self._worker_settings(pools)
        threads = HandlerThreads(settings.concurrency, "rota-drain")
        try:
            executor = self._executor(threads)
            worker = Worker(self._context(executor, settings, asyncio.to_thread))
            return await worker.drain()
        finally:
            threads.shutdown()

    # -- wiring ------------------------------------------------------------------------------

    def pools(self, served: Served) -> tuple[Pool, ...]:
        """A pool per queue given a limit in ``queues=``, one shared pool for the others."""
        limits = self.config.queues or {}
        queues = served.queues or (tuple(limits) if limits else tuple(self.registry.queues()))
        own = tuple(Pool((queue,), limits[queue]) for queue in queues if queue in limits)
        shared = tuple(queue for queue in queues if queue not in limits)
        concurrency = served.concurrency or self.config.concurrency
        return own + ((Pool(shared, concurrency),) if shared else ())

    def retention(self) -> Retention:
        return Retention(
            succeeded=self.config.succeeded_retention, failed=self.config.failed_retention
        )

    def scheduler_settings(self) -> SchedulerSettings:
        return SchedulerSettings(
            misfire_grace=self.config.misfire_grace,
            catchup_missed=self.config.catchup_missed,
            max_missed_runs=self.config.max_missed_runs,
            poll_interval=self.config.poll_interval,
        )

    def _worker_settings(self, pools: tuple[Pool, ...]) -> WorkerSettings:
        return WorkerSettings(
            pools=pools,
            poll_interval=self.config.poll_interval,
            lease_seconds=self.config.lease_seconds,
            retention=self.retention(),
            alert_after_failures=self.config.alert_after_failures,
        )

    def _executor(self, threads: HandlerThreads) -> Executor:
        return Executor(
            self.registry,
            self.clock,
            threads,
            max_snoozes=self.config.max_snoozes,
            max_result_bytes=self.config.max_result_bytes,
            events=self.events,
        )

    def _context(
        self,
        executor: Executor,
        settings: WorkerSettings,
        db_call: Callable[..., Awaitable[Any]],
    ) -> WorkerContext:
        return WorkerContext(
            self.store, executor, settings, self.events, self.announcer, db_call, self.timeline
        )

    async def _db_call(self, function: Callable[..., T], *args: Any) -> T:
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._db_threads, functools.partial(function, *args))

    def wake_worker(self) -> None:
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

    def wake_scheduler(self) -> None:
        scheduler, loop = self._scheduler, self._loop
        if scheduler is not None and loop is not None and not loop.is_closed():
            loop.call_soon_threadsafe(scheduler.wake)
