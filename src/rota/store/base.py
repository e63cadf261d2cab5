"""The storage seam: one method per operation, each taking ``now`` instead of reading a clock.

This protocol is the only door to the database: the façade, the runtime, the CLI and the
dashboard call these methods and never SQL, an engine or a driver (a lint rule keeps
SQLAlchemy inside ``rota.store``).  Methods are synchronous and thread-safe; the runtime calls
them from its database threads so the event loop never waits on a socket.  Every method
translates driver errors into ``StoreError`` (``TransientStoreError`` when a plain retry can
succeed) or, for a value the database refused, ``InvalidArguments``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from contextlib import AbstractContextManager
from datetime import datetime
from typing import Protocol, TypeAlias

from sqlalchemy.engine import Connection

from rota.core.clock import ClockReading
from rota.core.limits import FlowLimits
from rota.core.model import Counts, Job, JobState, NewJob, ProgressReport, Stranded, WorkerInfo
from rota.core.schedule_edits import Edit
from rota.core.schedules import Schedule, ScheduleChange, ScheduleSpec, ScheduleState, ScheduleStats
from rota.core.transitions import Transition
from rota.errors import StoreError
from rota.store.values import (
    Applied,
    JobSummary,
    Outlook,
    SchemaStatus,
    ServerInfo,
    UnreadableRow,
)

MIGRATION_LOCK_TIMEOUT = 120.0
"""Seconds ``migrate`` waits for another process's migration of the same tables."""

DEPENDENTS_LISTED = 100
"""Dependents a job's page lists (``rota job``, the dashboard); a fan-out may be far larger."""

CallerConnection: TypeAlias = Connection
"""A transaction the caller holds open (a SQLAlchemy ``Connection`` inside ``begin()``), for
``queue(connection=...)``: the jobs it receives exist only if that transaction commits."""


class StatementTooLarge(StoreError):
    """A write larger than the database takes in one statement (MySQL's ``max_allowed_packet``),
    refused by the server or found so before it was sent (``Store.complete``): repeating it as
    it is cannot succeed.  ``job_ids`` names the jobs whose outcome alone is too large, when
    known; none when the server refused a statement of several, which smaller ones may pass."""

    def __init__(self, message: str, *, job_ids: Sequence[int] = ()) -> None:
        super().__init__(message)
        self.job_ids = tuple(job_ids)


class NewJobSignal(Protocol):
    """A connection of its own that hears jobs inserted by any process as they commit; one
    thread waits on it, any thread may interrupt it."""

    def wait(self, timeout: float) -> bool:
        """Whether new jobs were announced within ``timeout`` seconds; ``False`` at once once
        interrupted; a ``StoreError`` when the connection is lost."""
        ...

    def interrupt(self) -> None: ...

    def close(self) -> None: ...


class Store(Protocol):
    @property
    def schedules(self) -> ScheduleStore: ...

    def connect(self) -> ServerInfo:
        """Reach the server and check that rota can run on it (``ConfigError`` if not)."""
        ...

    def server_info(self) -> ServerInfo:
        """Reach the server and describe it, even one rota cannot run on (see ``problem``):
        which host answered (``reached``) and whether it takes writes (``read_only``), since
        after a failover a URL may lead to a replica that answers reads and refuses writes."""
        ...

    def driver(self) -> tuple[str, str]:
        """The DB-API driver's name and version; needs no connection."""
        ...

    def migrate(self, lock_timeout: float = MIGRATION_LOCK_TIMEOUT) -> list[str]:
        """Bring the schema to this release's newest revision; safe when several processes
        start together.  Return the revisions applied, oldest first (none when it was up to
        date, or newer than this release: a rolling deploy's old processes must still start).

        Migrations of one database and table prefix take turns under a lock; ``StoreError``
        when it is not free within ``lock_timeout`` seconds.
        """
        ...

    def schema_status(self) -> SchemaStatus: ...

    def require_schema(self) -> None:
        """A missing or old schema is a ``StoreError`` saying to run ``rota migrate``, raised
        at connect rather than as "no such table" from the first query."""
        ...

    def drop_schema(self) -> None:
        """Drop rota's tables of this prefix and everything else ``migrate`` made, deleting
        their rows: for tests that make a schema per prefix and throw it away."""
        ...

    def dispose(self) -> None:
        """Close the pooled connections; the next call opens new ones."""
        ...

    def borrow(self, dbapi_connection: object) -> AbstractContextManager[CallerConnection]:
        """A ``CallerConnection`` over a DB-API connection its owner lends (Django's), for
        ``enqueue(connection=...)`` in the transaction the owner holds open: rota never
        commits, rolls back nor closes it.  The connection must come from this store's driver
        (``ConfigError`` otherwise)."""
        ...

    def enqueue(
        self,
        jobs: Sequence[NewJob],
        now: datetime,
        connection: CallerConnection | None = None,
    ) -> list[int]:
        """Insert jobs as ``pending``, all or none; return their ids in the order given.

        With ``connection`` they are written in the caller's open transaction; otherwise in a
        transaction of their own, repeated after a lost connection only when it was lost
        before the ``COMMIT`` was sent, never during it (it may have committed).
        """
        ...

    def claim(
        self,
        worker_id: str,
        queues: Sequence[str],
        tasks: Sequence[str],
        limit: int,
        now: datetime,
        lease_until: datetime,
        limits: Mapping[str, FlowLimits] | None = None,
    ) -> list[Job]:
        """Move up to ``limit`` due pending jobs of ``tasks`` in ``queues`` to ``running``.

        Queues paused with ``set_queues_paused`` are skipped, read in the same transaction.
        Due means ``run_at <= now``; order is priority, then ``run_at``, then id.  Each claimed
        job's attempt is incremented and its lease given to ``worker_id`` until
        ``lease_until``.  Concurrent callers never receive the same job.  A job of a task in
        ``limits`` starts only within its concurrency and rate limits; the others are passed
        over and stay pending, never blocking the rest.
        """
        ...

    def complete(
        self,
        worker_id: str,
        transitions: Sequence[Transition],
        now: datetime,
        progress: Sequence[ProgressReport] = (),
    ) -> Applied:
        """Apply the transitions of jobs ``worker_id`` holds, in one transaction, after writing
        the ``progress`` their attempts reported since the last heartbeat (the last value is
        kept even when no heartbeat came between it and the end).

        Each one applies only if its job is still ``running`` under that worker's lease, at
        the attempt it was held at (``Transition.held``); those that applied are returned,
        with the dependents the failed or cancelled ones cancelled in the same transaction.
        Every statement stays below what the server takes in one (results are grouped by
        their size as sent); a result too large for any statement is a ``StatementTooLarge``
        naming its job, raised before anything is written, as is the server's refusal of a
        statement (naming none).
        """
        ...

    def heartbeat(
        self,
        worker_id: str,
        job_ids: Sequence[int],
        now: datetime,
        lease_until: datetime,
        progress: Sequence[ProgressReport] = (),
    ) -> tuple[set[int], set[int]]:
        """Renew the worker's row and the leases of its running jobs, and write the
        ``progress`` reported since the last heartbeat in the same transaction (each only
        while its attempt still holds the job).

        Returns ``(cancel_requested, lost)``: jobs someone asked to cancel, and jobs no longer
        held by this worker (rescued after an expired lease, say).
        """
        ...

    def expired_leases(self, now: datetime, limit: int) -> list[Job]:
        """Running jobs whose lease ended before ``now``, oldest lease first."""
        ...

    def rescue(self, transitions: Sequence[Transition], now: datetime) -> Applied:
        """Apply rescue transitions to jobs whose lease is still expired; those that applied,
        and the dependents cancelled with them."""
        ...

    def counts(self, finished_since: datetime | None = None) -> Counts:
        """Job counts by state, by queue and by task (``Counts``, a pending job of a paused
        queue as ``paused``): every job, or every live job and those that finished at or after
        ``finished_since``, read from an index."""
        ...

    def job(self, job_id: int) -> Job | None:
        """The job with its ``depends_on``; ``None`` when there is no such job."""
        ...

    def job_state(self, job_id: int) -> JobState | None:
        """The job's state as ``job`` shows it (a pending job of a paused queue is ``paused``);
        ``None`` when there is no such job.  One short read of neither its arguments nor its
        result nor its errors, for ``rota.result`` waiters that poll an unfinished job."""
        ...

    def dependents(self, job_id: int, limit: int = DEPENDENTS_LISTED) -> list[int]:
        """Ids of the jobs that depend on ``job_id`` (at most ``limit``, lowest first)."""
        ...

    def jobs(
        self,
        states: Sequence[JobState] = (),
        task: str | None = None,
        queue: str | None = None,
        limit: int | None = 100,
    ) -> list[Job]:
        """Newest first; ``limit=None`` lists them all."""
        ...

    def summaries(
        self,
        states: Sequence[JobState] = (),
        task: str | None = None,
        queue: str | None = None,
        limit: int | None = 100,
        offset: int = 0,
        job_id: int | None = None,
    ) -> list[JobSummary]:
        """``jobs`` without their arguments, newest first, skipping the ``offset`` newest that
        match; ``job_id`` keeps only that job.  For listings, whose memory must not grow with
        the jobs' payloads."""
        ...

    def last_scheduled(self) -> dict[str, JobSummary]:
        """The newest job (by id) each schedule enqueued, by schedule name, in one query."""
        ...

    def finished_per_period(self, bounds: Sequence[datetime]) -> dict[str, list[int]]:
        """How many jobs reached each final state in each period between consecutive
        ``bounds`` (ascending): ``{state: [n, ...]}`` with ``len(bounds) - 1`` counts for
        every final state, a job finished at ``t`` counting where ``bounds[i] <= t <
        bounds[i + 1]``.  Counted by the database in one query over the ``finished_at``
        index, so its cost in memory is the same for any number or size of jobs."""
        ...

    def cancel(self, job_id: int, now: datetime) -> Applied | None:
        """Cancel a pending or paused job, or ask the worker of a running one to cancel it.

        ``Applied`` names the job in ``job_ids`` when it was cancelled (its dependents cancelled
        with it in ``cascaded``), in ``requested`` when its worker was asked; it is empty when
        the job had already finished, and ``None`` when there is no such job.
        """
        ...

    def set_job_state(self, job_id: int, source: JobState, target: JobState) -> bool | None:
        """Move a job from ``source`` to ``target`` if it is still in ``source``.

        ``True`` when moved, ``False`` when the job is in another state, ``None`` when there is
        no such job.
        """
        ...

    def set_queues_paused(self, names: Sequence[str], paused: bool, now: datetime) -> list[str]:
        """Pause or resume queues (persisted; ``claim`` skips paused ones); the names changed."""
        ...

    def paused_queues(self) -> set[str]: ...

    def waiting_queues(self) -> set[str]:
        """Queues that hold pending or paused jobs."""
        ...

    def retry(self, transition: Transition) -> bool:
        """Apply a manual retry if the job is still in the transition's source state."""
        ...

    def acquire_lease(self, name: str, owner: str, now: datetime, until: datetime) -> bool:
        """Take or renew the lease ``name`` for ``owner`` unless someone else holds it."""
        ...

    def prune(self, states: Sequence[JobState], before: datetime, limit: int) -> int:
        """Delete at most ``limit`` jobs of ``states`` finished before ``before``; the count."""
        ...

    def fold_finished(self, until: datetime) -> int:
        """Fold the jobs finished before ``until`` into the tallies that ``counts()`` reads
        instead of their rows; how many were folded."""
        ...

    def register_worker(self, worker: WorkerInfo) -> None: ...

    def unregister_worker(self, worker_id: str) -> None: ...

    def workers(self, alive_at: datetime) -> list[WorkerInfo]:
        """Workers live at ``alive_at`` (``WorkerInfo.is_live``: their last heartbeat is
        within two of their heartbeat intervals), by id."""
        ...

    def prune_workers(self, before: datetime) -> int:
        """Delete the rows of workers whose last heartbeat is older than ``before``; how many."""
        ...

    def prune_limits(self, before: datetime, limit: int) -> int:
        """Delete up to ``limit`` flow-limit key rows last written before ``before``."""
        ...

    def stranded(self, alive_at: datetime) -> list[Stranded]:
        """Pending jobs that none of the workers live at ``alive_at`` can claim, counted by
        task and queue (sorted so), each with the reason."""
        ...

    def unreadable(self, limit: int) -> list[UnreadableRow]:
        """Up to ``limit`` rows this rota cannot read: of workers, schedules, and jobs that
        have not finished (a state rota does not know is not a finished one)."""
        ...

    def server_clock(self) -> ClockReading | None:
        """A reading of the database server's clock (UTC) bracketed by this host's monotonic
        clock, or ``None`` where it is this host's (SQLite)."""
        ...

    def outlook(self, queues: Sequence[str], tasks: Sequence[str], now: datetime) -> Outlook:
        """One read for an idle worker: a claimable job due in ``queues`` of ``tasks``, an
        expired lease, and the next tick (``store.outlook``)."""
        ...

    def listen_for_jobs(self) -> NewJobSignal | None:
        """A new listening connection, or ``None`` where the backend announces no jobs (MySQL,
        SQLite: workers poll)."""
        ...


class ScheduleStore(Protocol):
    """Schedules by name; ``fire`` is the only way ticks become jobs.  Every change of a
    schedule is written with its history entry, in one transaction, by ``actor``."""

    def upsert(
        self, spec: ScheduleSpec, first_run: datetime, now: datetime, actor: str
    ) -> tuple[Schedule | None, Edit | None]:
        """Create by name or update the definition (``core.schedule_edits.sync``); a changed
        cron or tz, or a disabled schedule coming back, restarts at ``first_run``.  Never
        creates a second row.  The schedule now, and the change made, if any; ``(None,
        None)`` when the row of that name cannot be read, which is left as it is."""
        ...

    def change(
        self, name: str, version: int, edit: Edit, actor: str, now: datetime
    ) -> Schedule | None:
        """Apply ``edit`` if the schedule is live and still at ``version``; else ``None``."""
        ...

    def get(self, name: str) -> Schedule | None:
        """The schedule; ``StoreError`` when its row cannot be read (``UnreadableRow``)."""
        ...

    def all(self, states: Sequence[ScheduleState] = ()) -> list[Schedule]:
        """By name, leaving out the rows that cannot be read (each logged once)."""
        ...

    def due(self, now: datetime, limit: int) -> list[Schedule]:
        """Active schedules whose ``next_run_at <= now``, earliest first, leaving out the rows
        that cannot be read (each logged once)."""
        ...

    def next_due(self) -> datetime | None: ...

    def fire(
        self, schedule: Schedule, next_run: datetime, jobs: Sequence[NewJob], now: datetime
    ) -> bool:
        """Insert the tick jobs and advance ``next_run_at`` if it still equals the value read.

        ``False`` means another instance fired first; nothing is written and nothing raised.
        A job whose ``(schedule, scheduled_at)`` already exists is skipped.
        """
        ...

    def set_state(
        self,
        name: str | None,
        target: ScheduleState,
        sources: Sequence[ScheduleState],
        now: datetime,
        actor: str,
        next_runs: Mapping[str, datetime] | None = None,
    ) -> int: ...

    def resume(self, next_runs: Mapping[str, datetime], now: datetime, actor: str) -> int: ...

    def disable(self, names: Sequence[str], now: datetime, actor: str = "code") -> int: ...

    def history_of(self, name: str, limit: int | None = None) -> list[ScheduleChange]:
        """The schedule's changes, newest first."""
        ...

    def prune_history(self, before: datetime, limit: int) -> int:
        """Delete up to ``limit`` history entries older than ``before``; how many."""
        ...

    def record_tick(self, name: str, failed: bool, threshold: int) -> str | None:
        """Count a finished tick: ``"failing"`` when it makes ``threshold`` failures in a row,
        ``"recovered"`` when a success ends a failing run; once per flip across the cluster."""
        ...

    def stats(self, since: datetime) -> dict[str, ScheduleStats]:
        """Every schedule's ``ScheduleStats``, runs and failures counted over the ticks
        scheduled at or after ``since``."""
        ...
