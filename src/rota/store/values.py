"""The values the ``Store`` protocol returns besides rota's own model (``rota.core.model``):
what a connection found of the server and the schema, a job as lists show it, a row that
cannot be read, an idle worker's outlook, and the schedules a scheduler's pass fired."""

from __future__ import annotations

from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from rota.core.model import AttemptError, Job, JobRef, JobState, NewJob, Progress
from rota.core.overlap import Decision
from rota.core.schedules import Schedule


@dataclass(frozen=True)
class ServerInfo:
    """The database server as ``connect`` found it."""

    product: str
    """``MySQL``, ``MariaDB``, ``PostgreSQL`` or ``SQLite``."""
    version: str
    skip_locked: str
    """How claims keep two workers off one job: ``yes``, ``no`` or ``single writer``."""
    problem: str | None = None
    """Why rota cannot run on this server (no ``SKIP LOCKED``), or ``None``."""
    reached: str | None = None
    """``host:port`` the connection reached (of a URL's several hosts, the one that took it;
    behind a proxy, also the node the server calls itself); ``None`` for a file or a socket."""
    read_only: str | None = None
    """Why the server takes no writes (a replica, a Galera node not ready), or ``None``: a
    worker reaching a read-only server claims and finishes nothing there."""

    def __str__(self) -> str:
        return f"{self.product} {self.version}"


@dataclass(frozen=True)
class SchemaStatus:
    """Where rota's tables stand against the migrations of this release."""

    revision: str | None
    head: str
    state: str
    """``missing``, ``up to date``, ``behind``, or ``newer`` (written by a newer release)."""
    problem: str | None
    """Why the tables cannot serve this release, naming the fix; ``None`` when they can."""


@dataclass(frozen=True, slots=True)
class JobSummary:
    """A job as the dashboard's lists show it: what they need of its row, and its last error.

    Arguments are as large as their callers make them (up to ``max_payload_bytes`` each), so a
    page of a thousand whole jobs can hold a hundred megabytes; a summary leaves them out.
    ``Store.job`` gives the whole job.
    """

    id: int
    task: str
    queue: str
    state: JobState
    attempt: int
    max_attempts: int | None
    run_at: datetime
    finished_at: datetime | None
    schedule: str | None
    lease_owner: str | None
    """The worker running it, while it runs."""
    last_error: AttemptError | None
    """The newest failed attempt's error (``None`` also when the column cannot be read)."""
    progress: Progress | None = None
    """The latest progress its handler reported (kept once it finished; cleared at a claim)."""
    started_at: datetime | None = None
    failures: int = 0
    """How many of its attempts failed (the length of the job's ``errors``)."""
    unknown_state: str | None = None
    """The row's state when rota does not know it (``state`` is then ``UNKNOWN``)."""

    @classmethod
    def of(cls, job: Job) -> JobSummary:
        """A whole job as a summary (``find`` reads whole jobs; its arguments stay behind)."""
        return cls(
            id=job.id,
            task=job.task,
            queue=job.queue,
            state=job.state,
            attempt=job.attempt,
            max_attempts=job.max_attempts,
            run_at=job.run_at,
            finished_at=job.finished_at,
            schedule=job.schedule,
            lease_owner=job.lease_owner,
            last_error=job.errors[-1] if job.errors else None,
            progress=job.progress,
            started_at=job.started_at,
            failures=len(job.errors),
            unknown_state=job.unknown_state,
        )


@dataclass(frozen=True, slots=True)
class UnreadableRow:
    """A row this rota cannot read in full (written by a newer rota, or by hand): left alone
    by whatever cannot use it, logged once by each process that meets it (``reported``), and
    listed by ``rota check``."""

    kind: str
    """``job``, ``worker`` or ``schedule``."""
    key: str
    """The job's id, the worker's id or the schedule's name."""
    problem: str
    """What cannot be read, quoting the stored text."""


@dataclass(frozen=True)
class Outlook:
    """What one look found, at ``at`` (the caller's clock)."""

    jobs_due: bool
    """A pending job of the served queues and tasks is due, in an open queue."""
    leases_expired: bool
    """A running job's lease has expired, or a waiting job's timeout passed: the rescue has
    work."""
    next_tick: datetime | None
    """The earliest next run of an active schedule."""
    at: datetime


@dataclass(frozen=True, slots=True)
class Fired:
    """A schedule a pass moved on: what its overlap policy decided, and the jobs written."""

    schedule: Schedule
    decision: Decision
    jobs: tuple[NewJob, ...]


@dataclass(frozen=True, slots=True)
class Firings:
    """One batch of a scheduler's pass: how many due schedules it took, and those it fired
    (a schedule taken and not fired was left for its planner's caller to deal with)."""

    taken: int
    fired: list[Fired]


@dataclass(frozen=True, slots=True)
class Cascaded:
    """A dependent cancelled because a job it depends on ended badly, with the error saying so
    (``DEPENDENCY_FAILED``)."""

    job: JobRef
    error: AttemptError


@dataclass(frozen=True, slots=True)
class Pruned:
    """One batch of the prune: how many jobs it deleted, and the ``finished_at`` it deleted
    through, after which the next batch goes on (``None``: it deleted the last ones)."""

    jobs: int
    through: datetime | None


@dataclass(frozen=True, slots=True)
class Applied:
    """What one write of transitions changed, committed: the jobs whose transition applied (a
    compare-and-set another writer lost changes nothing, and is not among them), the
    dependents cancelled with them, (``cancel``) the running jobs asked to stop, and the
    waits that ended their job ``cancelled`` instead, a cancel having been asked meanwhile.
    What rota announces is this, never what it meant to write."""

    job_ids: frozenset[int] = frozenset()
    cascaded: tuple[Cascaded, ...] = ()
    requested: frozenset[int] = field(default_factory=frozenset)
    cancelled: frozenset[int] = field(default_factory=frozenset)

    def __len__(self) -> int:
        return len(self.job_ids)


@dataclass(frozen=True)
class Loan:
    """A DB-API connection its owner lends for one transaction of rota's (``Store.lend_from``),
    and the lock that serialises its use when the owner shares it between threads."""

    connection: object
    serial: AbstractContextManager[Any] | None = None


@dataclass(frozen=True, slots=True)
class Taken:
    """What a wait found in its job's mailbox: the payload (JSON) of the oldest untaken signal
    of its name, if there was one."""

    found: bool
    payload: str | None = None


@dataclass(frozen=True, slots=True)
class QueuedBatch:
    """A batch just written: its id, its jobs' ids in order, and its callbacks' ids."""

    id: int
    job_ids: tuple[int, ...]
    on_success: int | None
    on_complete: int | None
