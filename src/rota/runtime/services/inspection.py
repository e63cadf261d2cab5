"""What the application and its tools read, through the façade: ``rota.jobs()`` and
``rota.counts()``, and ``rota.inspect``, the read-only view the CLI and the dashboard are built
on (``rota check``, ``rota jobs``, the dashboard's pages), so that none of them holds the store.

``jobs`` and ``counts`` wait until the database is reached, as the application's calls do; the
tools' reads go straight to the database, since a tool must say what it finds there (a server
that answers, a schema that is missing) rather than wait for it.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from rota.core import checks
from rota.core.clock import Clock, ClockReading
from rota.core.definitions import DefinitionConflict, conflicts
from rota.core.model import Counts, Job, JobState, JobStatus, WorkerInfo
from rota.core.names import check_name
from rota.core.schedules import Schedule, ScheduleState, ScheduleStats
from rota.core.search import BulkAction
from rota.core.stranded import Stranded
from rota.core.stuck import RunningJob
from rota.errors import InvalidArguments
from rota.runtime.common import Gate
from rota.runtime.services.status import statuses
from rota.store.base import DEPENDENTS_LISTED, Store
from rota.store.values import JobSummary, SchemaStatus, ServerInfo, UnreadableRow

STUCK_LISTED = 1000
"""The most stuck jobs one read lists."""


class Inspection:
    """``rota.inspect``: reads only; times default to now on rota's clock."""

    def __init__(self, store: Store, clock: Clock, gate: Gate) -> None:
        self.store, self.clock, self.gate = store, clock, gate

    def of(self, namespace: str | None) -> Inspection:
        """The same reads of another service's rows (``None``: this one's); ``InvalidArguments``
        for a name no namespace can have."""
        if namespace is None or namespace == self.store.namespace:
            return self
        checked = check_name("namespace", namespace, InvalidArguments)
        return Inspection(self.store.in_namespace(checked), self.clock, self.gate)

    def namespaces(self) -> list[str]:
        """This service's namespace and those of the others with a schedule, a worker or a
        paused queue in the database, sorted."""
        return sorted({self.store.namespace, *self.store.cluster.namespaces()})

    def statuses(self, limit: int | None) -> list[JobStatus]:
        """``rota.jobs(limit)``, once the database is reached."""
        if limit is not None:
            checks.check_int(limit, InvalidArguments, "limit", 0)
        self.gate.ensure_ready()
        return statuses(self.store, limit, self.clock.now())

    def counts(self, finished_since: datetime | None = None) -> Counts:
        """``rota.counts(finished_since=...)``, once the database is reached."""
        if finished_since is not None:
            finished_since = checks.moment(finished_since, InvalidArguments, "finished_since")
        self.gate.ensure_ready()
        return self.store.finished.counts(finished_since)

    def connect(self) -> ServerInfo:
        """Reach the server; ``ConfigError`` when rota cannot run on it."""
        return self.store.connect()

    def server(self) -> ServerInfo:
        """The server reached, even one rota cannot run on (its ``problem`` says why)."""
        return self.store.server_info()

    def driver(self) -> tuple[str, str]:
        """The database driver's name and version; reaches nothing."""
        return self.store.driver()

    def schema(self) -> SchemaStatus:
        return self.store.schema_status()

    def server_clock(self) -> ClockReading | None:
        """The server's clock, the time line of leases; ``None`` where it is this host's."""
        return self.store.server_clock()

    def workers(self, alive_at: datetime | None = None) -> list[WorkerInfo]:
        """The workers live at ``alive_at`` (now); ``datetime.min`` in UTC lists every row."""
        return self.store.cluster.workers(alive_at or self.clock.now())

    def conflicts(self, at: datetime | None = None) -> list[DefinitionConflict]:
        """Tasks that two workers live at ``at`` (now) define differently (``core.definitions``)."""
        return conflicts(self.workers(at))

    def stranded(self, at: datetime | None = None) -> list[Stranded]:
        """Pending jobs that no worker live at ``at`` (now) can claim, by task and queue."""
        return self.store.reads.stranded(at or self.clock.now())

    def stuck(self, limit: int = STUCK_LISTED) -> list[RunningJob]:
        """Running jobs announced stuck in their current attempt (``core.stuck``), oldest
        started first."""
        return self.store.stuck.marked(limit)

    def unreadable(self, limit: int) -> list[UnreadableRow]:
        return self.store.unreadable(limit)

    def job(self, job_id: int) -> Job | None:
        return self.store.reads.job(job_id)

    def jobs(
        self,
        states: Sequence[JobState] = (),
        task: str | None = None,
        queue: str | None = None,
        limit: int | None = 100,
    ) -> list[Job]:
        """Jobs with their arguments and results, newest first."""
        return self.store.reads.jobs(states, task, queue, limit)

    def summaries(
        self,
        states: Sequence[JobState] = (),
        task: str | None = None,
        queue: str | None = None,
        limit: int | None = 100,
        offset: int = 0,
        job_id: int | None = None,
    ) -> list[JobSummary]:
        """Jobs without their payloads, newest first: listings of any size."""
        return self.store.reads.summaries(states, task, queue, limit, offset, job_id)

    def dependents(self, job_id: int, limit: int = DEPENDENTS_LISTED) -> list[int]:
        return self.store.reads.dependents(job_id, limit)

    def paused_queues(self) -> set[str]:
        return self.store.cluster.paused_queues()

    def finished_per_period(self, bounds: Sequence[datetime]) -> dict[str, list[int]]:
        return self.store.reads.finished_per_period(bounds)

    def schedules(self, states: Sequence[ScheduleState] = ()) -> list[Schedule]:
        """By name, those of ``states`` (every one if none given)."""
        return self.store.schedules.all(states)

    def schedule(self, name: str) -> Schedule | None:
        return self.store.schedules.get(name)

    def schedule_stats(self, since: datetime) -> dict[str, ScheduleStats]:
        """Each schedule's runs and failures over the ticks scheduled from ``since``."""
        return self.store.schedules.stats(since)

    def last_scheduled(self) -> dict[str, JobSummary]:
        """The newest job each schedule enqueued, by schedule name."""
        return self.store.reads.last_scheduled()

    def bulk_actions(self, limit: int = 20) -> list[BulkAction]:
        """The latest bulk actions recorded, newest first: who asked, the filter, how many
        jobs each changed (the dashboard's list of them)."""
        checks.check_int(limit, InvalidArguments, "limit", 1)
        return self.store.search.bulk_actions(limit)
