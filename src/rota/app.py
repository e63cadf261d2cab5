"""Rota: the façade an application holds; registers tasks, queues jobs and wires the worker."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import hashlib
import logging
import signal
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import AbstractContextManager, nullcontext
from datetime import datetime, timedelta
from types import TracebackType
from typing import Any, TypeVar, overload

from rota.config import RotaConfig, default_url
from rota.core import payload, values
from rota.core.clock import Clock, SystemClock
from rota.core.cron import Cron
from rota.core.model import (
    DEFAULT_QUEUE,
    Counts,
    DrainResult,
    Job,
    JobState,
    JobStatus,
    NewJob,
    ScheduleSource,
    ScheduleSpec,
    ScheduleState,
    ScheduleStats,
)
from rota.core.names import check_name, name_problem
from rota.core.transitions import manual_retry
from rota.enqueue import Enqueue
from rota.errors import (
    ConfigError,
    InvalidArguments,
    JobNotFound,
    ScheduleNotFound,
    StoreError,
    TransientStoreError,
)
from rota.observe.events import EventLog, Hook
from rota.observe.otel import load_telemetry
from rota.runtime.connect import DatabaseWait, check_clock
from rota.runtime.drain import drain
from rota.runtime.executor import Executor
from rota.runtime.maintenance import Retention, prune_finished
from rota.runtime.scheduler import (
    Scheduler,
    SchedulerSettings,
    code_spec,
    fire_due,
    schedule_job,
    sync_code_schedules,
)
from rota.runtime.worker import Pool, Worker, WorkerSettings
from rota.status import job_status, schedule_status
from rota.store import CallerConnection, open_store
from rota.store.urls import describe_url
from rota.tasks import Handler, TaskDefinition, TaskRegistry

F = TypeVar("F", bound=Callable[..., Any])
T = TypeVar("T")
logger = logging.getLogger("rota")
LIVE_WORKER_WINDOW = timedelta(minutes=2)


class Rota:
    """Durable jobs and cron on one database.

    >>> rota = Rota("sqlite:///app.db")
    >>> @rota.task(retries=5)
    ... def send_email(ctx, to: str) -> None: ...
    >>> job_id = rota.queue(send_email, "a@example.com", delay=30)
    """

    def __init__(
        self,
        url: str | None = None,
        *,
        concurrency: int = 5,
        catchup_missed: bool = False,
        max_missed_runs: int = 1,
        clock: Clock | None = None,
        logger: logging.Logger | None = None,
        table_prefix: str = "rota_",
        auto_migrate: bool = True,
        poll_interval: float = 0.5,
        lease_seconds: float = 30.0,
        connect_timeout: float = 30.0,
        misfire_grace: float = 60.0,
        max_payload_bytes: int = payload.DEFAULT_MAX_PAYLOAD_BYTES,
        queues: Mapping[str, int] | None = None,
        succeeded_retention: timedelta | float = timedelta(days=7),
        failed_retention: timedelta | float = timedelta(days=30),
        log_format: str = "text",
        tracer_provider: Any = None,
        meter_provider: Any = None,
    ) -> None:
        self.config = RotaConfig(
            url=url or default_url(),
            concurrency=concurrency,
            catchup_missed=catchup_missed,
            max_missed_runs=max_missed_runs,
            misfire_grace=misfire_grace,
            table_prefix=table_prefix,
            auto_migrate=auto_migrate,
            poll_interval=poll_interval,
            lease_seconds=lease_seconds,
            connect_timeout=connect_timeout,
            max_payload_bytes=max_payload_bytes,
            queues=dict(queues) if queues is not None else None,
            succeeded_retention=values.duration(
                succeeded_retention, ConfigError, "succeeded_retention", positive=True
            ),
            failed_retention=values.duration(
                failed_retention, ConfigError, "failed_retention", positive=True
            ),
        )
        self.clock: Clock = clock or SystemClock()
        self.events = EventLog(logger, log_format)
        self.telemetry = load_telemetry(tracer_provider, meter_provider)
        self.store = open_store(self.config.url, table_prefix)
        self.registry = TaskRegistry()
        self._ready = False
        self._ready_lock = threading.Lock()
        self._worker: Worker | None = None
        self._scheduler: Scheduler | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._task_threads: ThreadPoolExecutor | None = None
        self._db_threads: ThreadPoolExecutor | None = None

    # -- definitions -------------------------------------------------------------------------

    @overload
    def task(self, handler: F, /) -> F: ...

    @overload
    def task(
        self,
        handler: None = None,
        /,
        *,
        name: str | None = None,
        cron: str | None = None,
        tz: str = "UTC",
        retries: int = 3,
        retry_delay: float = 10.0,
        retry_cap: float = 3600.0,
        timeout: float | None = None,
        queue: str = DEFAULT_QUEUE,
        priority: int = 0,
        unique: bool = False,
    ) -> Callable[[F], F]: ...

    def task(
        self,
        handler: F | None = None,
        /,
        *,
        name: str | None = None,
        cron: str | None = None,
        tz: str = "UTC",
        retries: int = 3,
        retry_delay: float = 10.0,
        retry_cap: float = 3600.0,
        timeout: float | None = None,
        queue: str = DEFAULT_QUEUE,
        priority: int = 0,
        unique: bool = False,
    ) -> F | Callable[[F], F]:
        """Register a function as a task, under its ``__name__`` unless ``name=`` is given.

        >>> @rota.task(retries=5, retry_delay=10, queue="mail")
        ... def send_email(ctx: JobContext, to: str) -> None: ...
        """

        def register(function: F) -> F:
            definition = TaskDefinition(
                name=name or function.__name__,
                handler=function,
                cron=cron,
                tz=tz,
                retries=retries,
                retry_delay=retry_delay,
                retry_cap=retry_cap,
                timeout=timeout,
                queue=queue,
                priority=priority,
                unique=unique,
            )
            self.define_task(definition)
            return function

        return register(handler) if handler is not None else register

    def on(self, event: str, hook: Hook) -> None:
        """Call ``hook(event)`` (sync, or async on the worker's loop) at each such event.

        Names are those of the execution log (``job.failed``, ``job.retrying``,
        ``schedule.missed`` ...) or ``"*"`` for all; a hook that raises is logged and ignored.

        >>> rota.on("job.failed", lambda event: alert(f"{event.task} failed: {event.error}"))
        """
        self.events.on(event, hook)

    def define_task(self, definition: TaskDefinition) -> TaskDefinition:
        """Register a task; with ``cron`` it also gets a schedule named after it at start."""
        if definition.cron is not None:
            Cron(definition.cron, definition.tz)
        self.registry.add(definition)
        return definition

    def schedule(
        self,
        cron: str,
        task: str | Handler,
        /,
        *,
        name: str | None = None,
        tz: str = "UTC",
        args: Sequence[Any] = (),
        kwargs: Mapping[str, Any] | None = None,
        queue: str | None = None,
        priority: int | None = None,
    ) -> str:
        """Persist a cron schedule of ``task`` and return its id (its name).

        Calling it again with the same name updates the schedule instead of adding one.

        >>> rota.schedule("0 3 * * *", cleanup, tz="UTC", name="nightly-cleanup")
        'nightly-cleanup'
        """
        checked = Cron(cron, tz)
        task_name, definition, task_queue = self._resolve(task)
        if definition is not None:
            definition.check_arguments(args, kwargs or {})
        if priority is not None:
            values.check_priority(priority, ConfigError)
        spec = ScheduleSpec(
            name=task_name if name is None else name,
            task=task_name,
            cron=cron,
            tz=tz,
            payload=payload.encode(args, kwargs or {}, max_bytes=self.config.max_payload_bytes),
            queue=task_queue if queue is None else queue,
            priority=(definition.priority if definition else 0) if priority is None else priority,
            source=ScheduleSource.RUNTIME,
        )
        check_name("schedule", spec.name, ConfigError)
        check_name("queue", spec.queue, ConfigError)
        now = self.clock.now()
        existing = self._with_schema(lambda: self.store.schedules.get(spec.name))
        if existing is not None and existing.spec.source is ScheduleSource.CODE:
            raise ConfigError(f"schedule {spec.name!r} is defined in code; give another name")
        self.store.schedules.upsert(spec, checked.first_run(now), now)
        self._wake_scheduler()
        return spec.name

    def pause(self, id: int | str | None = None) -> bool:
        """Pause a schedule (by name) or a pending job (by id); with no id, every schedule and
        every queue.  Ticks missed while paused never run; a paused job is never claimed.

        ``False`` when it was not active or pending; unknown ids raise ``ScheduleNotFound`` or
        ``JobNotFound``.
        """
        if id is None:
            paused = self._set_schedules(None, ScheduleState.PAUSED, ScheduleState.ACTIVE)
            queues = self._set_queues(self._known_queues(), paused=True)
            return bool(paused or queues)
        if isinstance(id, str):
            return bool(self._set_schedules(id, ScheduleState.PAUSED, ScheduleState.ACTIVE))
        return self._set_job(_check_job_id(id), JobState.PENDING, JobState.PAUSED)

    def resume(self, id: int | str | None = None) -> bool:
        """Resume a paused schedule from its first tick at or after now, or a paused job; with
        no id, every paused schedule and every paused queue."""
        if id is not None and not isinstance(id, str):
            moved = self._set_job(_check_job_id(id), JobState.PAUSED, JobState.PENDING)
            self._wake_worker()
            return moved
        self._storable_schedule_name(id)
        now = self.clock.now()
        paused = self._with_schema(lambda: self.store.schedules.all((ScheduleState.PAUSED,)))
        next_runs = {
            schedule.name: Cron(schedule.spec.cron, schedule.spec.tz).first_run(now)
            for schedule in paused
            if id is None or schedule.name == id
        }
        resumed = self.store.schedules.resume(next_runs, now)
        self._check_schedule(id, resumed)
        queues = (
            self._set_queues(sorted(self.store.paused_queues()), paused=False) if id is None else []
        )
        self._wake_scheduler()
        self._wake_worker()
        return bool(resumed or queues)

    def pause_queue(self, name: str) -> bool:
        """Stop every worker of the cluster claiming from ``name`` (persisted, seen at the next
        claim); jobs keep arriving and wait.  ``False`` if it was paused already."""
        return bool(self._set_queues([check_name("queue", name, InvalidArguments)], paused=True))

    def resume_queue(self, name: str) -> bool:
        """Let workers claim from ``name`` again; ``False`` if it was not paused."""
        changed = self._set_queues([check_name("queue", name, InvalidArguments)], paused=False)
        self._wake_worker()
        return bool(changed)

    def paused_queues(self) -> list[str]:
        """The queues no worker claims from, by name."""
        return sorted(self._with_schema(self.store.paused_queues))

    def _set_schedules(self, name: str | None, target: ScheduleState, source: ScheduleState) -> int:
        self._storable_schedule_name(name)
        changed = self._with_schema(lambda: self.store.schedules.set_state(name, target, (source,)))
        self._check_schedule(name, changed)
        return changed

    def _set_job(self, job_id: int, source: JobState, target: JobState) -> bool:
        moved = self._with_schema(lambda: self.store.set_job_state(job_id, source, target))
        if moved is None:
            raise JobNotFound(f"job {job_id} does not exist")
        if moved:
            self.events.emit(f"job.{target.value}", job_id=job_id)
        return moved

    def _set_queues(self, names: Sequence[str], *, paused: bool) -> list[str]:
        if not names:
            return []
        now = self.clock.now()
        changed = self._with_schema(lambda: self.store.set_queues_paused(names, paused, now))
        for name in changed:
            self.events.emit("queue.paused" if paused else "queue.resumed", queue=name)
        return changed

    def _known_queues(self) -> list[str]:
        """Every queue this process or the database knows of: what ``pause()`` pauses."""
        now = self.clock.now()
        known = {*self.registry.queues(), *(self.config.queues or {})}
        known |= self._with_schema(self.store.waiting_queues)
        known |= {s.spec.queue for s in self.store.schedules.all()}
        for worker in self.store.workers(now - LIVE_WORKER_WINDOW):
            known |= set(worker.queues)
        return sorted(known)

    @staticmethod
    def _storable_schedule_name(name: str | None) -> None:
        """A name no schedule can have is not found, rather than sent to the driver."""
        if name is not None and name_problem("schedule", name) is not None:
            raise ScheduleNotFound(f"schedule {name!r} does not exist")

    def _check_schedule(self, name: str | None, changed: int) -> None:
        if name is not None and not changed and self.store.schedules.get(name) is None:
            raise ScheduleNotFound(f"schedule {name!r} does not exist")

    # -- queueing ----------------------------------------------------------------------------

    def queue(
        self,
        task: str | Handler,
        /,
        *positional: Any,
        delay: float | timedelta | None = None,
        run_at: datetime | None = None,
        priority: int | None = None,
        queue: str | None = None,
        unique_key: str | None = None,
        connection: CallerConnection | None = None,
        args: Sequence[Any] | None = None,
        kwargs: Mapping[str, Any] | None = None,
        **keyword: Any,
    ) -> int:
        """Persist one job of ``task`` (a registered handler or a task name); return its id.

        Arguments are checked to be JSON-serialisable here, never later.  With ``connection``
        the job is written in that caller's transaction and exists only if it commits.
        """
        request = Enqueue(
            task,
            *positional,
            delay=delay,
            run_at=run_at,
            priority=priority,
            queue=queue,
            unique_key=unique_key,
            args=args,
            kwargs=kwargs,
            **keyword,
        )
        return self.queue_many([request], connection=connection)[0]

    def queue_many(
        self, requests: Iterable[Enqueue], *, connection: CallerConnection | None = None
    ) -> list[int]:
        """Persist many jobs at once, all or none; return their ids in the order given.

        Every request is validated before anything is written; rows go in multi-row INSERTs
        of up to 1,000 (one round trip each) inside one transaction.
        """
        requests = list(requests)
        if not requests:
            return []
        resolved: dict[str | Handler, tuple[str, TaskDefinition | None, str]] = {}
        with self._enqueue_span(requests) as trace:
            jobs = [self._new_job(request, resolved, trace) for request in requests]
            return self._write(jobs, connection)

    def _enqueue_span(self, requests: list[Enqueue]) -> AbstractContextManager[str | None]:
        if self.telemetry is None:
            return nullcontext(None)
        names = [r.task if isinstance(r.task, str) else r.task.__name__ for r in requests]
        return self.telemetry.enqueue(names)

    def _write(self, jobs: list[NewJob], connection: CallerConnection | None) -> list[int]:
        now = self.clock.now()
        if connection is not None:
            self._ensure_ready()
            ids = self.store.enqueue(jobs, now, connection=connection)
        else:
            ids = self._with_schema(lambda: self.store.enqueue(jobs, now))
        self._wake_worker()
        return ids

    async def aqueue(self, task: str | Handler, /, *positional: Any, **options: Any) -> int:
        """``queue`` for async code: the database round trip runs in a thread."""
        call = functools.partial(self.queue, task, *positional, **options)
        return await asyncio.to_thread(call)

    def _new_job(
        self,
        request: Enqueue,
        resolved: dict[str | Handler, tuple[str, TaskDefinition | None, str]],
        trace: str | None,
    ) -> NewJob:
        if request.task not in resolved:
            resolved[request.task] = self._resolve(request.task)
        name, definition, task_queue = resolved[request.task]
        if definition is not None:
            definition.check_arguments(request.args, request.kwargs)
        if request.priority is not None:
            values.check_priority(request.priority, InvalidArguments)
        encoded = payload.encode(
            request.args, request.kwargs, max_bytes=self.config.max_payload_bytes, trace=trace
        )
        default_priority = definition.priority if definition else 0
        unique_key = request.unique_key
        if unique_key is None and definition is not None and definition.unique:
            unique_key = f"{name}:{hashlib.sha256(encoded.encode()).hexdigest()[:40]}"
        if unique_key is not None:
            check_name("unique_key", unique_key, InvalidArguments)
        if request.queue is not None:
            check_name("queue", request.queue, InvalidArguments)
        return NewJob(
            task=name,
            payload=encoded,
            run_at=self._run_at(request.delay, request.run_at),
            queue=task_queue if request.queue is None else request.queue,
            priority=default_priority if request.priority is None else request.priority,
            max_attempts=definition.policy.max_attempts if definition else None,
            unique_key=unique_key,
        )

    def _resolve(self, task: str | Handler) -> tuple[str, TaskDefinition | None, str]:
        """The task's name, its local definition if any, and the queue its jobs go to."""
        definition = (
            self.registry.by_handler(task)
            if not isinstance(task, str)
            else self.registry.find(task)
        )
        if definition is not None:
            return definition.name, definition, definition.queue
        name = check_name("task", task, InvalidArguments)
        return name, None, self._remote_queue(name)

    def _remote_queue(self, name: str) -> str:
        """The queue a live worker registered a task under, for jobs queued by name only."""
        try:
            workers = self._with_schema(
                lambda: self.store.workers(self.clock.now() - LIVE_WORKER_WINDOW)
            )
        except StoreError:
            return DEFAULT_QUEUE
        for worker in workers:
            if name in worker.task_queues:
                return worker.task_queues[name]
        logger.warning(
            "task %r is not registered here nor by any live worker; the job will wait",
            name,
            extra={"event": "job.unknown_task", "task": name},
        )
        return DEFAULT_QUEUE

    def _run_at(self, delay: float | timedelta | None, run_at: datetime | None) -> datetime:
        if delay is not None and run_at is not None:
            raise InvalidArguments("give delay or run_at, not both")
        if run_at is not None:
            return values.moment(run_at, InvalidArguments, "run_at")
        now = self.clock.now()
        return now if delay is None else values.later(now, delay, InvalidArguments)

    # -- inspection and control --------------------------------------------------------------

    def job(self, job_id: int) -> Job:
        """The job's current record; raises ``JobNotFound`` (code ``JOB_NOT_FOUND``)."""
        _check_job_id(job_id)
        found = self._with_schema(lambda: self.store.job(job_id))
        if found is None:
            raise JobNotFound(f"job {job_id} does not exist")
        return found

    def cancel(self, id: int | str) -> bool:
        """Cancel a job (int id) or a schedule (its name); ``False`` if there is no such job or
        schedule, or it had already ended.

        A pending or paused job is cancelled at once, a running one at its worker's next
        heartbeat.
        """
        if isinstance(id, str):
            if name_problem("schedule", id) is not None:
                return False
            ended = self._with_schema(
                lambda: self.store.schedules.set_state(
                    id, ScheduleState.CANCELLED, (ScheduleState.ACTIVE, ScheduleState.PAUSED)
                )
            )
            return bool(ended)
        job_id = _check_job_id(id)
        result = self._with_schema(lambda: self.store.cancel(job_id, self.clock.now()))
        if result:
            job = self.job(job_id)
            if job.state is JobState.CANCELLED:
                self.events.job("job.cancelled", job)
            else:
                self.events.job("job.cancel_requested", job)
        return bool(result)

    def retry(self, job_id: int) -> bool:
        """Move a failed or cancelled job back to pending with a fresh attempt budget."""
        job = self.job(job_id)
        if job.state not in (JobState.FAILED, JobState.CANCELLED):
            return False
        applied = self._with_schema(lambda: self.store.retry(manual_retry(job, self.clock.now())))
        self._wake_worker()
        return applied

    def prune(self) -> int:
        """Delete finished jobs older than their retention now, in small batches; the count."""
        return self._with_schema(
            lambda: prune_finished(self.store, self._retention(), self.clock.now())
        )

    def run_now(self, schedule_id: str) -> int:
        """Enqueue one job of the schedule at once; its cron ticks carry on as before."""
        self._storable_schedule_name(schedule_id)
        schedule = self._with_schema(lambda: self.store.schedules.get(schedule_id))
        if schedule is None:
            raise ScheduleNotFound(f"schedule {schedule_id!r} does not exist")
        now = self.clock.now()
        job = schedule_job(schedule, now, self.registry, tick=None)
        (job_id,) = self.store.enqueue([job], now)
        self._wake_worker()
        return job_id

    def jobs(self, limit: int | None = None) -> list[JobStatus]:
        """A status per schedule (disabled ones aside), then per pending, paused or running
        job, newest first: every one of them, or the newest ``limit`` jobs."""
        if limit is not None:
            values.check_int(limit, InvalidArguments, "limit", 0)
        schedules = self._with_schema(
            lambda: self.store.schedules.all(
                (ScheduleState.ACTIVE, ScheduleState.PAUSED, ScheduleState.CANCELLED)
            )
        )
        stats = self.store.schedules.stats() if schedules else {}
        live = (JobState.PENDING, JobState.PAUSED, JobState.RUNNING)
        active = self.store.jobs(states=live, limit=limit) if limit != 0 else []
        paused = self.store.paused_queues() if active else set()
        return [schedule_status(s, stats.get(s.name, ScheduleStats())) for s in schedules] + [
            job_status(job, paused) for job in active
        ]

    def counts(self) -> Counts:
        """Exact job counts by state, queue and task, from one aggregate query."""
        return self._with_schema(self.store.counts)

    # -- running -----------------------------------------------------------------------------

    async def start(self) -> None:
        """Connect (retrying up to ``connect_timeout``), migrate if enabled, start the worker."""
        await self._start(self.config.connect_timeout)

    async def _start(self, connect_timeout: float | None) -> None:
        """Connect, sync schedules and register the worker, all retried while the database is
        unreachable; a permanent error (wrong password, missing schema) is raised at once."""
        if self._worker is not None:
            return
        wait = DatabaseWait(describe_url(self.config.url), connect_timeout)
        while True:
            try:
                await asyncio.to_thread(self._connect_once)
                await asyncio.to_thread(self._sync_schedules)
                worker = await self._start_worker()
                break
            except TransientStoreError as error:
                await asyncio.sleep(wait.failed(error))
        wait.succeeded()
        self._worker = worker
        self._scheduler = Scheduler(
            self.store.schedules,
            self.registry,
            self.clock,
            self.events,
            self._scheduler_settings(),
            self._db_call,
            worker.notify,
        )
        self._scheduler.start()

    async def _start_worker(self) -> Worker:
        with contextlib.suppress(StoreError):
            await asyncio.to_thread(check_clock, self.store, self.clock, self.config.lease_seconds)
        self._loop = asyncio.get_running_loop()
        self.events.bind(self._loop)
        settings = WorkerSettings(
            pools=self._pools(),
            poll_interval=self.config.poll_interval,
            lease_seconds=self.config.lease_seconds,
            retention=self._retention(),
        )
        self._task_threads = ThreadPoolExecutor(settings.concurrency, "rota-task")
        self._db_threads = ThreadPoolExecutor(3, "rota-db")
        worker = Worker(self.store, self._executor(), settings, self.events, self._db_call)
        try:
            await worker.start()
        except BaseException:
            await self._release_threads()
            raise
        return worker

    async def stop(self, grace: float = 30.0) -> None:
        """Stop claiming, wait up to ``grace`` s for running jobs, return the rest to pending."""
        worker, self._worker = self._worker, None
        scheduler, self._scheduler = self._scheduler, None
        if worker is None:
            return
        if scheduler is not None:
            await scheduler.stop()
        await worker.stop(grace)
        await self._release_threads()

    async def _release_threads(self) -> None:
        if self._task_threads is not None:
            self._task_threads.shutdown(wait=False, cancel_futures=True)
        if self._db_threads is not None:
            # A cancelled loop's last query may still run; let it return its connection.
            await asyncio.to_thread(self._db_threads.shutdown, True)
        self._task_threads = self._db_threads = None
        self.events.bind(None)

    async def __aenter__(self) -> Rota:
        await self.start()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.stop()

    def run(self, grace: float = 30.0) -> None:
        """Run the worker until SIGINT or SIGTERM, then stop gracefully; a second signal
        interrupts the running jobs at once instead of waiting out ``grace``."""
        asyncio.run(self._run_until_signalled(grace))

    async def _run_until_signalled(self, grace: float) -> None:
        """Wait for the database for as long as it takes, unless a signal comes first.

        A second signal ends the grace at once through the worker's own grace-expiry path, so
        an interrupted job ends the same either way."""
        stop = asyncio.Event()
        draining: Worker | None = None

        def on_signal() -> None:
            if stop.is_set() and draining is not None:
                logger.warning(
                    "stopping now: interrupting running jobs without waiting for them",
                    extra={"event": "worker.grace_skipped"},
                )
                draining.end_grace()
            stop.set()

        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, on_signal)
        starting = asyncio.create_task(self._start(connect_timeout=None))
        stopping = asyncio.create_task(stop.wait())
        try:
            await asyncio.wait({starting, stopping}, return_when=asyncio.FIRST_COMPLETED)
            if starting.done():
                starting.result()
                await stopping
                logger.info(
                    "stopping: waiting up to %g s for running jobs; send the signal again to "
                    "stop now",
                    grace,
                    extra={"event": "worker.stopping"},
                )
        finally:
            for task in (starting, stopping):
                task.cancel()
            await asyncio.gather(starting, stopping, return_exceptions=True)
            draining = self._worker
            await self.stop(grace)
            for sig in (signal.SIGINT, signal.SIGTERM):
                loop.remove_signal_handler(sig)

    def drain(self, queue: str | None = None) -> DrainResult:
        """Run every due job in this process until none is left; for tests and scripts."""
        return asyncio.run(self.adrain(queue))

    async def adrain(self, queue: str | None = None) -> DrainResult:
        """``drain`` for async code."""
        await asyncio.to_thread(self._ensure_ready)
        if self._worker is None:
            self.events.bind(asyncio.get_running_loop())
        await asyncio.to_thread(self._sync_schedules)
        await asyncio.to_thread(
            fire_due,
            self.store.schedules,
            self.registry,
            self._scheduler_settings(),
            self.events,
            self.clock.now(),
        )
        threads = ThreadPoolExecutor(self.config.concurrency, "rota-drain")
        try:
            executor = Executor(
                self.registry, self.clock, self.events, threads, telemetry=self.telemetry
            )
            queues = [queue] if queue else self.registry.queues()
            return await drain(
                self.store, executor, queues, self.config.concurrency, self.config.lease_seconds
            )
        finally:
            threads.shutdown(wait=False)

    # -- plumbing ----------------------------------------------------------------------------

    def _pools(self) -> tuple[Pool, ...]:
        """A pool per queue given a limit in ``queues=``, one shared pool for the others."""
        limits = self.config.queues or {}
        served = self.config.worker_queues or (
            tuple(limits) if limits else tuple(self.registry.queues())
        )
        own = tuple(Pool((queue,), limits[queue]) for queue in served if queue in limits)
        shared = tuple(queue for queue in served if queue not in limits)
        return own + ((Pool(shared, self.config.concurrency),) if shared else ())

    def _retention(self) -> Retention:
        return Retention(
            succeeded=self.config.succeeded_retention, failed=self.config.failed_retention
        )

    def _scheduler_settings(self) -> SchedulerSettings:
        return SchedulerSettings(
            misfire_grace=self.config.misfire_grace,
            catchup_missed=self.config.catchup_missed,
            max_missed_runs=self.config.max_missed_runs,
            poll_interval=self.config.poll_interval,
        )

    def _sync_schedules(self) -> None:
        """Code is the source of truth for definitions: upsert them, disable the removed."""
        now = self.clock.now()
        empty = payload.encode((), {})
        specs = [code_spec(task, empty) for task in self.registry if task.cron is not None]
        live = self.store.workers(now - LIVE_WORKER_WINDOW)
        live_tasks = {task for worker in live for task in worker.tasks}
        disabled = sync_code_schedules(
            self.store.schedules, specs, self.registry.names(), live_tasks, now
        )
        for name in disabled:
            self.events.emit(
                "schedule.disabled",
                logging.WARNING,
                schedule=name,
                reason="no longer defined in code",
            )

    def _wake_scheduler(self) -> None:
        scheduler, loop = self._scheduler, self._loop
        if scheduler is not None and loop is not None and not loop.is_closed():
            loop.call_soon_threadsafe(scheduler.wake)

    def _executor(self) -> Executor:
        assert self._task_threads is not None
        return Executor(
            self.registry, self.clock, self.events, self._task_threads, telemetry=self.telemetry
        )

    async def _db_call(self, function: Callable[..., T], *args: Any) -> T:
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._db_threads, functools.partial(function, *args))

    def _wake_worker(self) -> None:
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

    def _with_schema(self, work: Callable[[], T]) -> T:
        self._ensure_ready()
        return work()

    def _ensure_ready(self) -> None:
        """Connect, retrying while unreachable until ``connect_timeout``; migrate if enabled."""
        if self._ready:
            return
        wait = DatabaseWait(describe_url(self.config.url), self.config.connect_timeout)
        while True:
            try:
                self._connect_once()
                break
            except TransientStoreError as error:
                time.sleep(wait.failed(error))
        wait.succeeded()

    def _connect_once(self) -> None:
        with self._ready_lock:
            if not self._ready:
                self._connect()
                self._ready = True

    def _connect(self) -> None:
        logger.debug("connected to %s", self.store.connect())
        if self.config.auto_migrate:
            self.store.migrate()
        else:
            self.store.require_schema()


def _check_job_id(job_id: object) -> int:
    """Job ids are positive ints; anything else is a caller's mistake, not a missing job."""
    if isinstance(job_id, bool) or not isinstance(job_id, int):
        raise InvalidArguments(f"a job id is an int, got {type(job_id).__name__}")
    return job_id
