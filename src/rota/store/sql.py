"""SqlStore: the ``Store`` protocol on one SQLAlchemy database, for every supported dialect.

It holds no SQL of its own: each call goes to the sibling that owns the tables involved —
``jobs.py`` (a job's life), ``reads.py`` (inspection), ``cluster.py`` (workers, leases, paused
queues), ``schedules.py``, ``unreadable.py`` and ``migrate.py`` — all over one shared
``Database``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from contextlib import AbstractContextManager
from datetime import datetime
from typing import Any

from sqlalchemy import Select
from sqlalchemy.engine import Engine

from rota.core.clock import ClockReading
from rota.core.limits import FlowLimits
from rota.core.model import (
    Counts,
    Job,
    JobState,
    NewJob,
    ProgressReport,
    Stranded,
    WorkerInfo,
)
from rota.core.transitions import Transition
from rota.errors import ConfigError, StoreError
from rota.store import migrate
from rota.store.base import DEPENDENTS_LISTED, MIGRATION_LOCK_TIMEOUT, CallerConnection
from rota.store.borrowed import Lender
from rota.store.cluster import SqlCluster
from rota.store.database import Database
from rota.store.dialects.base import ConnectionSettings
from rota.store.events import EventSink, log_event
from rota.store.finished import SqlFinished
from rota.store.jobs import SqlJobs
from rota.store.outlook import SqlOutlook
from rota.store.reads import SqlReads
from rota.store.schedules import SqlSchedules
from rota.store.schema import DEFAULT_TABLE_PREFIX, Schema, jobs_channel
from rota.store.signals import ListeningConnection
from rota.store.unreadable import SqlUnreadable
from rota.store.values import Applied, JobSummary, Outlook, SchemaStatus, ServerInfo, UnreadableRow


def open_store(
    url: str,
    table_prefix: str = DEFAULT_TABLE_PREFIX,
    connection: ConnectionSettings | None = None,
    events: EventSink = log_event,
) -> SqlStore:
    """A store on ``url`` (connections open lazily, at the first call), its connections bounded
    by ``connection`` (``RotaConfig``'s defaults if not given), announcing what it meets to
    ``events`` (logged, if not given); ``ConfigError`` for a URL rota cannot use or a driver
    that is not installed."""
    return SqlStore(Database(url, table_prefix, connection, events))


class SqlStore:
    def __init__(self, database: Database) -> None:
        self.database = database
        self.schedules = SqlSchedules(database)
        self._jobs = SqlJobs(database)
        self._finished = SqlFinished(database)
        self._reads = SqlReads(database)
        self._cluster = SqlCluster(database)
        self._lender = Lender(database)
        self._outlook = SqlOutlook(database, self._jobs, self.schedules)
        self._unreadable = SqlUnreadable(database)

    @property
    def engine(self) -> Engine:
        """For tests and tools that issue SQL of their own; rota itself never does."""
        return self.database.engine

    @property
    def schema(self) -> Schema:
        return self.database.schema

    # -- the database itself ---------------------------------------------------------------

    def connect(self) -> ServerInfo:
        server = self.server_info()
        if server.problem is not None:
            raise ConfigError(server.problem)
        return server

    def server_info(self) -> ServerInfo:
        return self.database.server_info()

    def driver(self) -> tuple[str, str]:
        return self.database.driver()

    def server_clock(self) -> ClockReading | None:
        return self.database.server_clock()

    def unreadable(self, limit: int) -> list[UnreadableRow]:
        return self._unreadable.rows(limit)

    def outlook(self, queues: Sequence[str], tasks: Sequence[str], now: datetime) -> Outlook:
        return self._outlook.look(queues, tasks, now)

    def migrate(self, lock_timeout: float = MIGRATION_LOCK_TIMEOUT) -> list[str]:
        return migrate.upgrade(self.database, lock_timeout)

    def schema_status(self) -> SchemaStatus:
        return migrate.schema_status(self.database)

    def require_schema(self) -> None:
        problem = self.schema_status().problem
        if problem is not None:
            raise StoreError(problem)

    def drop_schema(self) -> None:
        migrate.drop(self.database)

    def dispose(self) -> None:
        self.database.engine.dispose()

    def listen_for_jobs(self) -> ListeningConnection | None:
        if not self.database.dialect.announces_new_jobs:
            return None
        return ListeningConnection(self.database, jobs_channel(self.database.table_prefix))

    # -- jobs ------------------------------------------------------------------------------

    def borrow(self, dbapi_connection: object) -> AbstractContextManager[CallerConnection]:
        return self._lender.borrow(dbapi_connection)

    def enqueue(
        self,
        jobs: Sequence[NewJob],
        now: datetime,
        connection: CallerConnection | None = None,
    ) -> list[int]:
        return self._jobs.enqueue(jobs, now, connection)

    def claim_query(
        self, queues: Sequence[str], tasks: Sequence[str], limit: int, now: datetime
    ) -> Select[Any]:
        """The candidate query of ``claim``, exposed so tests can EXPLAIN it."""
        return self._jobs.claim_query(queues, tasks, limit, now)

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
        return self._jobs.claim(worker_id, queues, tasks, limit, now, lease_until, limits)

    def complete(
        self,
        worker_id: str,
        transitions: Sequence[Transition],
        now: datetime,
        progress: Sequence[ProgressReport] = (),
    ) -> Applied:
        return self._jobs.complete(worker_id, transitions, now, progress)

    def heartbeat(
        self,
        worker_id: str,
        job_ids: Sequence[int],
        now: datetime,
        lease_until: datetime,
        progress: Sequence[ProgressReport] = (),
    ) -> tuple[set[int], set[int]]:
        return self._jobs.heartbeat(worker_id, job_ids, now, lease_until, progress)

    def expired_leases(self, now: datetime, limit: int) -> list[Job]:
        return self._jobs.expired_leases(now, limit)

    def rescue(self, transitions: Sequence[Transition], now: datetime) -> Applied:
        return self._jobs.rescue(transitions, now)

    def cancel(self, job_id: int, now: datetime) -> Applied | None:
        return self._jobs.cancel(job_id, now)

    def set_job_state(self, job_id: int, source: JobState, target: JobState) -> bool | None:
        return self._jobs.set_job_state(job_id, source, target)

    def retry(self, transition: Transition) -> bool:
        return self._finished.retry(transition)

    def prune(self, states: Sequence[JobState], before: datetime, limit: int) -> int:
        return self._finished.prune(states, before, limit)

    def fold_finished(self, until: datetime) -> int:
        return self._finished.fold(until)

    # -- inspection ------------------------------------------------------------------------

    def job(self, job_id: int) -> Job | None:
        return self._reads.job(job_id)

    def job_state(self, job_id: int) -> JobState | None:
        return self._reads.job_state(job_id)

    def dependents(self, job_id: int, limit: int = DEPENDENTS_LISTED) -> list[int]:
        return self._reads.dependents(job_id, limit)

    def jobs(
        self,
        states: Sequence[JobState] = (),
        task: str | None = None,
        queue: str | None = None,
        limit: int | None = 100,
    ) -> list[Job]:
        return self._reads.jobs(states, task, queue, limit)

    def summaries(
        self,
        states: Sequence[JobState] = (),
        task: str | None = None,
        queue: str | None = None,
        limit: int | None = 100,
        offset: int = 0,
        job_id: int | None = None,
    ) -> list[JobSummary]:
        return self._reads.summaries(states, task, queue, limit, offset, job_id)

    def last_scheduled(self) -> dict[str, JobSummary]:
        return self._reads.last_scheduled()

    def finished_per_period(self, bounds: Sequence[datetime]) -> dict[str, list[int]]:
        return self._reads.finished_per_period(bounds)

    def counts(self, finished_since: datetime | None = None) -> Counts:
        return self._finished.counts(finished_since)

    def waiting_queues(self) -> set[str]:
        return self._reads.waiting_queues()

    def stranded(self, alive_at: datetime) -> list[Stranded]:
        workers = self._cluster.workers(alive_at)
        return Stranded.among(self._reads.pending_by_task_and_queue(), workers)

    # -- the cluster -----------------------------------------------------------------------

    def register_worker(self, worker: WorkerInfo) -> None:
        self._cluster.register_worker(worker)

    def unregister_worker(self, worker_id: str) -> None:
        self._cluster.unregister_worker(worker_id)

    def workers(self, alive_at: datetime) -> list[WorkerInfo]:
        return self._cluster.workers(alive_at)

    def prune_workers(self, before: datetime) -> int:
        return self._cluster.prune_workers(before)

    def prune_limits(self, before: datetime, limit: int) -> int:
        return self._jobs.flow.prune(before, limit)

    def acquire_lease(self, name: str, owner: str, now: datetime, until: datetime) -> bool:
        return self._cluster.acquire_lease(name, owner, now, until)

    def set_queues_paused(self, names: Sequence[str], paused: bool, now: datetime) -> list[str]:
        return self._cluster.set_queues_paused(names, paused, now)

    def paused_queues(self) -> set[str]:
        return self._cluster.paused_queues()
