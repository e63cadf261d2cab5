"""Rota: the façade an application holds.

It registers tasks and hands every call to the part that does it: the services the application
calls (``runtime.services``: readiness, queueing, control, schedules, results, status), the
host of this process's worker (``runtime.host``), and the ``Store`` protocol, the only door to
the database.  It builds them in order, each given what it needs, once.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Callable, Iterable, Mapping, Sequence
from contextlib import AbstractContextManager
from datetime import datetime, timedelta
from typing import Any, TypeVar, overload

from typing_extensions import Unpack

from rota.config import DEFAULT_GRACE, NO_DATABASE, RotaConfig, Settings, configure, url_named
from rota.core.clock import Clock, on_time_line
from rota.core.events import EventName
from rota.core.model import Counts, DrainResult, Job, JobStatus
from rota.core.schedules import Schedule, ScheduleChange
from rota.core.urls import describe_url
from rota.enqueue import Enqueue
from rota.errors import ConfigError
from rota.job_calls import JobCalls
from rota.observe.events import EventLog, Hook
from rota.observe.logs import configure_unless_configured
from rota.observe.metrics import WorkerMetrics
from rota.observe.otel import load_telemetry
from rota.runtime.announcer import Announcer
from rota.runtime.common import Common
from rota.runtime.host.drain import drain
from rota.runtime.host.process import Host, Served, retention
from rota.runtime.host.signals import run_until_signalled
from rota.runtime.host.wakeups import ProcessGate, Wakeups
from rota.runtime.services import actors, control, results
from rota.runtime.services.bulk import Bulk
from rota.runtime.services.control import Control
from rota.runtime.services.inspection import Inspection
from rota.runtime.services.queueing import Enqueuing, Lent, Stamped
from rota.runtime.services.readiness import Readiness
from rota.runtime.services.results import Completions
from rota.runtime.services.schedules import ScheduleControl
from rota.runtime.services.workflows import Workflows
from rota.store import CallerConnection, Store, open_store
from rota.tasks import Handler, TaskDefinition, TaskOptions, TaskRegistry
from rota.workflow_calls import WorkflowCalls

F = TypeVar("F", bound=Callable[..., Any])


class Rota(JobCalls, WorkflowCalls):
    """Durable jobs and cron on one database.

    >>> rota = Rota("sqlite:///app.db", concurrency=10)
    >>> @rota.task(retries=5)
    ... def send_email(ctx, to: str) -> None: ...
    >>> job_id = rota.queue(send_email, "a@example.com", delay=30)
    """

    def __init__(
        self,
        url: str | None = None,
        *,
        clock: Clock | None = None,
        logger: Any = None,
        log_format: str | None = None,
        tracer_provider: Any = None,
        meter_provider: Any = None,
        **settings: Unpack[Settings],
    ) -> None:
        """``settings`` are ``RotaConfig``'s fields (``concurrency``, ``table_prefix``,
        ``poll_interval`` ...), validated and frozen there; one not given is read from its
        ``ROTA_<KEYWORD>`` variable, else its default.  Without ``url`` nor
        ``$ROTA_DATABASE_URL`` the instance may queue and inspect (``sqlite:///rota.db``) but
        not run a worker; passing a SQLite URL is how to run one on an embedded file."""
        self._config = configure(url, settings)
        self._database_named = url_named(url)
        self.clock: Clock = on_time_line(clock)
        self.events = EventLog(logger, log_format, self.config.hook_timeout)
        self.telemetry = load_telemetry(tracer_provider, meter_provider)
        self.store: Store = open_store(
            self.config.url,
            self.config.table_prefix,
            self.config.connection,
            self.events.log,
            self.config.namespace,
        )
        self.registry = TaskRegistry()
        common = Common(self.store, self.registry, self.clock, self.events)
        payload_bytes = self.config.max_payload_bytes
        self._readiness = Readiness(
            self.store, self.config, self.clock, self.events, describe_url(self.config.url)
        )
        wakeups = Wakeups()
        gate = ProcessGate(self._readiness, wakeups)
        self._completions = Completions()
        announcer = Announcer(self.events, self.telemetry, self._completions)
        if self.config.metrics_port is not None:
            announcer.metrics = WorkerMetrics()
        self._enqueuing = Enqueuing(common, self.telemetry, payload_bytes, gate)
        self._schedules = ScheduleControl(common, payload_bytes, self._enqueuing.target, gate)
        queues = tuple(self.config.queues or {})
        self._control = Control(common, self._schedules, queues, gate, announcer)
        self._workflows = Workflows(common, gate, payload_bytes)
        self._bulk = Bulk(common, gate, announcer)
        self._inspection = Inspection(self.store, self.clock, gate)
        self._host = Host(
            common, self.config, self._readiness, wakeups, announcer, self._schedules.sync_code
        )

    @property
    def config(self) -> RotaConfig:
        """The settings, validated and frozen when the instance was made."""
        return self._config

    @property
    def namespace(self) -> str:
        """The service this instance is (``Rota(namespace=...)``): it syncs, claims, lists and
        controls only the schedules, jobs, queues and workers of this namespace (a job read or
        changed by its id excepted: ids are unique across namespaces)."""
        return self._config.namespace

    @overload
    def task(self, handler: F, /) -> F: ...

    @overload
    def task(self, handler: None = None, /, **options: Unpack[TaskOptions]) -> Callable[[F], F]: ...

    def task(
        self, handler: F | None = None, /, **options: Unpack[TaskOptions]
    ) -> F | Callable[[F], F]:
        """Register a function as a task, under its ``__name__`` unless ``name=`` is given.

        >>> @rota.task(retries=5, retry_delay=10, queue="mail")
        ... def send_email(ctx: JobContext, to: str) -> None: ...
        """

        def register(function: F) -> F:
            fields = {"name": self._task_name(function), **options}
            self.define_task(TaskDefinition(handler=function, **fields))  # type: ignore[arg-type]
            return function

        return register(handler) if handler is not None else register

    def _task_name(self, function: Callable[..., Any]) -> str:
        """The name ``task`` gives ``function`` when none is given."""
        return function.__name__

    def define_task(self, definition: TaskDefinition) -> TaskDefinition:
        """Register a task; with ``cron`` it also gets a schedule named after it at start."""
        self.registry.add(definition)
        return definition

    def on(self, event: EventName | str, hook: Hook) -> None:
        """Call ``hook(event)`` (sync, or async on the worker's loop) at each such event
        (``"*"``: every event); ``ConfigError`` for a name that is not an ``EventName``.

        >>> rota.on("job.failed", lambda event: alert(f"{event.task} failed: {event.error}"))
        """
        self.events.on(event, hook)

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
        overlap: str = "skip",
    ) -> str:
        """Persist a cron schedule of ``task`` and return its id (its name); calling it again
        with the same name updates the schedule.  ``overlap``: what a tick does while the
        schedule's previous run is unfinished (``"skip"``, ``"queue"`` or ``"allow"``)."""
        return self._schedules.define(
            cron, task, name, tz, args, kwargs or {}, queue, priority, overlap
        )

    def update_schedule(
        self,
        name: str,
        cron: str | None = None,
        tz: str | None = None,
        overlap: str | None = None,
        *,
        version: int | None = None,
    ) -> Schedule:
        """Change a schedule's cron, time zone and/or overlap policy for every process (seen
        within one poll), from its first tick at or after now.  For a schedule defined in code
        this is an override: it survives restarts and lasts until ``reset_schedule`` or until
        the code's own rule changes.  ``ScheduleConflict`` if it changed meanwhile, or is no
        longer at the ``version`` given (the one a form or prompt showed): nothing is written
        then."""
        return self._schedules.update(name, cron, tz, overlap, version)

    def reset_schedule(self, name: str, *, version: int | None = None) -> bool:
        """End a code schedule's override (back to the code's rule); ``False`` if it had none;
        ``ScheduleConflict`` if it is no longer at ``version``."""
        return self._schedules.reset(name, version)

    def get_schedule(self, name: str) -> Schedule:
        """The schedule's record; raises ``ScheduleNotFound``."""
        return self._schedules.get(name)

    def schedule_history(self, name: str, limit: int | None = None) -> list[ScheduleChange]:
        """The schedule's changes, newest first: created, updated, overridden, reset, paused,
        resumed, cancelled, disabled, override_cleared; each with time, actor, old and new."""
        return self._schedules.history(name, limit)

    def acting_as(self, actor: str) -> AbstractContextManager[None]:
        """Record schedule changes made in ``with rota.acting_as("admin:ana"):`` as theirs."""
        return actors.acting_as(actor)

    def run_now(self, schedule_id: str) -> int:
        """Enqueue one job of the schedule at once; its cron ticks carry on as before."""
        return self._schedules.run_now(schedule_id)

    def pause_queue(self, name: str) -> bool:
        """No worker of the cluster claims from ``name`` until it is resumed (persisted, seen at
        the next claim); jobs keep arriving and wait.  ``False`` if it was paused already."""
        return self._control.queue(name, paused=True)

    def resume_queue(self, name: str) -> bool:
        """Let workers claim from ``name`` again; ``False`` if it was not paused."""
        return self._control.queue(name, paused=False)

    def paused_queues(self) -> list[str]:
        return self._control.paused_queues()

    def queue(
        self,
        task: str | Handler,
        /,
        *positional: Any,
        connection: CallerConnection | None = None,
        **options: Any,
    ) -> int:
        """Persist one job of ``task`` (a registered handler or a task name); return its id.

        ``options`` are ``Enqueue``'s (``delay``, ``run_at``, ``priority``, ``queue``,
        ``unique_key``, ``depends_on``, ``after``, ``args``, ``kwargs``) and the task's keyword
        arguments; everything is checked here, never later (ids in ``depends_on`` and ``after``
        must exist).  With
        ``connection`` the job is written in that caller's transaction and exists only if it
        commits.
        """
        request = Enqueue(task, *positional, **options)
        return self.queue_many([request], connection=connection)[0]

    def queue_many(
        self, requests: Iterable[Enqueue], *, connection: CallerConnection | None = None
    ) -> list[int]:
        """Persist many jobs at once, all or none; return their ids in the order given."""
        return self._queue_stamped(list(requests), connection)[0]

    def _queue_stamped(self, requests: list[Enqueue], connection: Lent) -> Stamped:
        """``queue_many``, and the ``created_at`` the jobs were written with (as stored)."""
        return self._enqueuing.stamped(requests, connection)

    async def aqueue(self, task: str | Handler, /, *positional: Any, **options: Any) -> int:
        """``queue`` for async code: the database round trip runs in a thread."""
        return await asyncio.to_thread(functools.partial(self.queue, task, *positional, **options))

    def job(self, job_id: int) -> Job:
        """The job's current record; raises ``JobNotFound`` (code ``JOB_NOT_FOUND``)."""
        return self._control.find(job_id)

    def result(self, job_id: int, timeout: float | timedelta | None = None) -> Any:
        """The job's return value once it succeeded, waiting for it to end (``services.results``);
        ``JobFailed`` (its last error as ``.error``), ``JobCancelled``, ``ResultTimeout`` after
        ``timeout`` seconds, ``JobNotFound``."""
        results.outside_event_loop("rota.result()", "await rota.aresult()")
        return asyncio.run(self.aresult(job_id, timeout))

    async def aresult(self, job_id: int, timeout: float | timedelta | None = None) -> Any:
        """``result`` for async code."""
        job_id = control.job_id(job_id)
        await asyncio.to_thread(self._readiness.ensure_ready)
        completions, poll = self._completions, self.config.poll_interval
        store = self.store
        return await results.wait(
            store.reads.job_state, store.reads.job, self.clock, completions, poll, job_id, timeout
        )

    def prune(self) -> int:
        """Delete finished jobs older than their retention now, in small batches; the count."""
        return self._control.prune(retention(self.config))

    def jobs(self, limit: int | None = None) -> list[JobStatus]:
        """A status per schedule (disabled ones aside), then per pending, paused or running
        job, newest first: every one of them, or the newest ``limit`` jobs."""
        return self._inspection.statuses(limit)

    @property
    def inspect(self) -> Inspection:
        """The read-only view tools are built on (``rota check``, ``rota jobs``, the dashboard):
        the server and its schema, workers, listings, schedules and their stats."""
        return self._inspection

    def close(self) -> None:
        """Close the database connections this instance holds (after ``stop``, for a worker); a
        later call opens new ones, so closing twice is harmless.  For a tool, a script or a
        test done with its ``Rota``."""
        self.store.dispose()

    def counts(self, *, finished_since: datetime | None = None) -> Counts:
        """Exact job counts by state, queue and task, every job kept included; with
        ``finished_since``, finished jobs only from then (what the dashboard reads)."""
        return self._inspection.counts(finished_since)

    async def start(
        self,
        *,
        queues: Sequence[str] = (),
        concurrency: int | None = None,
        metrics_port: int | None = None,
    ) -> None:
        """Connect (retrying up to ``connect_timeout``), migrate if enabled, start the worker;
        ``queues`` and ``concurrency`` narrow this process's worker (``rota worker --queues``),
        ``metrics_port`` overrides the setting of that name."""
        self.check_database_named()
        served = Served(tuple(queues), concurrency, metrics_port)
        await self._host.start(self.config.connect_timeout, served)

    @property
    def metrics_port(self) -> int | None:
        """The port this process's worker serves its metrics on (the one bound, for a
        ``metrics_port`` of 0), while it runs; else ``None``."""
        metrics = self._host.announcer.metrics
        return metrics.port if metrics is not None else None

    def check_database_named(self) -> None:
        """``ConfigError`` unless a database was named: a worker on the default file would
        schedule every tick a second time beside the real workers, unseen by them."""
        if not self._database_named:
            raise ConfigError(NO_DATABASE)

    async def stop(self, grace: float = DEFAULT_GRACE) -> None:
        """Stop claiming, wait up to ``grace`` s for running jobs, return the rest to pending."""
        await self._host.stop(grace)

    async def __aenter__(self) -> Rota:
        await self.start()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.stop()

    def run(
        self,
        grace: float = DEFAULT_GRACE,
        *,
        queues: Sequence[str] = (),
        concurrency: int | None = None,
        metrics_port: int | None = None,
    ) -> None:
        """Run the worker until SIGINT or SIGTERM, then stop gracefully (as ``start``); a second
        signal interrupts the running jobs at once instead of waiting out ``grace``.  Logs as
        ``rota worker`` does, in ``log_format``, unless the application configured logging."""
        self.check_database_named()
        configure_unless_configured(self.events.log_format)
        served = Served(tuple(queues), concurrency, metrics_port)
        asyncio.run(run_until_signalled(self._host, grace, served))

    def drain(self, queue: str | None = None) -> DrainResult:
        """Run every due job in this process until none is left; for tests and scripts."""
        return asyncio.run(self.adrain(queue))

    async def adrain(self, queue: str | None = None) -> DrainResult:
        """``drain`` for async code."""
        return await drain(self._host, queue)
