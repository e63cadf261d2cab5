"""The host of one process's worker: it starts the worker and the scheduler once the database
is ready, gives them their threads, and stops them.

``start`` connects, syncs the code's schedules and registers the worker as one step retried
while the database is unreachable (``Readiness.wait``), then launches the worker's loops and the
scheduler on the running event loop.  The worker's own database calls run on a small pool of
threads, so that its event loop never waits on a socket.  ``runtime.host.signals`` runs a host
until a signal, ``runtime.host.drain`` runs due jobs in the calling process.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import threading
from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, TypeVar

from rota.config import RotaConfig
from rota.core.events import EventName
from rota.core.urls import describe_url
from rota.observe.metrics import WorkerMetrics
from rota.runtime.announcer import Announcer
from rota.runtime.common import Common
from rota.runtime.host.wakeups import Wakeups
from rota.runtime.retention import Retention
from rota.runtime.services.readiness import Readiness
from rota.runtime.worker import Worker, WorkerContext
from rota.runtime.worker.executor import Executor
from rota.runtime.worker.scheduler import Scheduler, SchedulerSettings
from rota.runtime.worker.settings import Pool, WorkerSettings
from rota.runtime.worker.threads import HandlerThreads

T = TypeVar("T")
DB_THREADS = 3
logger = logging.getLogger("rota")


@dataclass(frozen=True)
class Served:
    """What one worker process serves, when its command line narrows it (``rota worker
    --queues``, ``--concurrency``); by default every queue of its tasks, at ``concurrency``.
    ``metrics_port`` overrides the setting of that name (``--metrics-port``)."""

    queues: tuple[str, ...] = ()
    concurrency: int | None = None
    metrics_port: int | None = None


class Host:
    def __init__(
        self,
        common: Common,
        config: RotaConfig,
        readiness: Readiness,
        wakeups: Wakeups,
        announcer: Announcer,
        sync_code: Callable[[], None],
    ) -> None:
        """``sync_code`` upserts the code's schedules (``ScheduleControl.sync_code``), at each
        start and drain."""
        self.common = common
        self.store, self.registry, self.clock, self.events = common
        self.config = config
        self.readiness = readiness
        self.wakeups = wakeups
        self.announcer = announcer
        self.sync_code = sync_code
        self.worker: Worker | None = None
        self._scheduler: Scheduler | None = None
        self._task_threads: HandlerThreads | None = None
        self._db_threads: ThreadPoolExecutor | None = None

    async def start(self, connect_timeout: float | None, served: Served | None = None) -> None:
        """Connect, sync schedules and register the worker, all retried while the database is
        unreachable; a permanent error (wrong password, missing schema) is raised at once."""
        if self.worker is not None:
            return
        served = served or Served()
        worker = self._new_worker(served)
        cancelled = threading.Event()
        try:
            self._serve_metrics(served)  # first: a port that is taken touches no database
            prepare = functools.partial(self._prepare, worker)
            await asyncio.to_thread(self.readiness.wait, connect_timeout, prepare, cancelled)
            worker.launch()
        except BaseException:
            cancelled.set()
            await self._release_threads()
            raise
        self.worker = worker
        self._scheduler = Scheduler(
            self.store.schedules,
            self.registry,
            self.clock,
            self.events,
            scheduler_settings(self.config),
            self._db_call,
            worker.notify,
            worker.shared_outlook,
        )
        self._scheduler.start()
        self.wakeups.attach(asyncio.get_running_loop(), worker, self._scheduler)

    def _serve_metrics(self, served: Served) -> None:
        port = served.metrics_port if served.metrics_port is not None else self.config.metrics_port
        if port is None:
            return
        metrics = self.announcer.metrics or WorkerMetrics()
        metrics.serve(self.config.metrics_host, port)
        self.announcer.metrics = metrics

    def _prepare(self, worker: Worker) -> None:
        """What a worker needs of the database before its loops start, in one retried step."""
        self.readiness.connect_once()
        self.sync_code()
        worker.register()

    def _new_worker(self, served: Served) -> Worker:
        self.events.bind(asyncio.get_running_loop())
        settings = self.worker_settings(self.pools(served))
        self._task_threads = HandlerThreads(settings.concurrency, "rota-task")
        self._db_threads = ThreadPoolExecutor(DB_THREADS, "rota-db")
        executor = self.executor(self._task_threads)
        return Worker(self.context(executor, settings, self._db_call))

    async def stop(self, grace: float, signalled: bool = False) -> None:
        """Stop the scheduler and the worker, giving running jobs ``grace`` seconds
        (``worker.stopping``; ``signalled``: by a signal, which a second one cuts short)."""
        worker, self.worker = self.worker, None
        scheduler, self._scheduler = self._scheduler, None
        if worker is None:
            return
        self.wakeups.detach()
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
        if self.announcer.metrics is not None:
            self.announcer.metrics.close()
        if self._task_threads is not None:
            self._task_threads.shutdown()
        if self._db_threads is not None:
            # A cancelled loop's last query may still run; let it return its connection.
            await asyncio.to_thread(self._db_threads.shutdown, True)
        self._task_threads = self._db_threads = None
        self.events.bind(None)

    # -- wiring ------------------------------------------------------------------------------

    def pools(self, served: Served) -> tuple[Pool, ...]:
        """A pool per queue given a limit in ``queues=``, one shared pool for the others."""
        limits = self.config.queues or {}
        queues = served.queues or (tuple(limits) if limits else tuple(self.registry.queues()))
        own = tuple(Pool((queue,), limits[queue]) for queue in queues if queue in limits)
        shared = tuple(queue for queue in queues if queue not in limits)
        concurrency = served.concurrency or self.config.concurrency
        return own + ((Pool(shared, concurrency),) if shared else ())

    def worker_settings(self, pools: tuple[Pool, ...]) -> WorkerSettings:
        return WorkerSettings(
            pools=pools,
            poll_interval=self.config.poll_interval,
            lease_seconds=self.config.lease_seconds,
            retention=retention(self.config),
            alert_after_failures=self.config.alert_after_failures,
            database=describe_url(self.config.url),
            table_prefix=self.config.table_prefix,
            namespace=self.config.namespace,
        )

    def executor(self, threads: HandlerThreads) -> Executor:
        return Executor(
            self.registry,
            self.clock,
            threads,
            max_snoozes=self.config.max_snoozes,
            max_result_bytes=self.config.max_result_bytes,
            events=self.events,
            workflow=self.store.workflow,
            db_call=self._db_call,
        )

    def context(
        self,
        executor: Executor,
        settings: WorkerSettings,
        db_call: Callable[..., Awaitable[Any]],
    ) -> WorkerContext:
        timeline = self.readiness.timeline
        return WorkerContext(
            self.store, executor, settings, self.events, self.announcer, db_call, timeline
        )

    async def _db_call(self, function: Callable[..., T], *args: Any) -> T:
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._db_threads, functools.partial(function, *args))


def retention(config: RotaConfig) -> Retention:
    return Retention(succeeded=config.succeeded_retention, failed=config.failed_retention)


def scheduler_settings(config: RotaConfig) -> SchedulerSettings:
    return SchedulerSettings(
        misfire_grace=config.misfire_grace,
        catchup_missed=config.catchup_missed,
        max_missed_runs=config.max_missed_runs,
        poll_interval=config.poll_interval,
    )
