"""Frozen value types shared by every layer: job states, jobs, attempt errors, workers."""

from __future__ import annotations

from collections.abc import Collection, Iterable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from enum import Enum
from typing import Any

from rota.core.connection import DEFAULT_NAMESPACE

DEFAULT_QUEUE = "default"
LIVE_WORKER_WINDOW = timedelta(minutes=2)
"""How long after its last heartbeat a worker row that records no heartbeat interval (written
by an older rota) still counts as live; a newer worker is live for two of its own intervals."""
MISSED_HEARTBEATS = 2
"""Heartbeats a worker may miss before it is taken for dead: its tasks and queues no longer
count as served (``rota check``, the dashboard, jobs queued by name)."""
MAX_JOB_ID = 2**63 - 1
"""Ids are positive 64-bit integers (``BIGINT``); a larger number names no job."""


class JobState(str, Enum):
    PENDING = "pending"
    PAUSED = "paused"
    RUNNING = "running"
    WAITING = "waiting"
    """Parked by ``ctx.wait_for`` until a signal arrives or its timeout passes."""
    SUCCEEDED = "succeeded"
    FAILED = "failed"
    CANCELLED = "cancelled"
    UNKNOWN = "unknown"
    """Never written: how a row reads whose state is none of the others (a newer rota's, a
    hand edit's), its text kept in ``Job.unknown_state``.  No worker claims, rescues or
    retries such a job; it is listed, counted apart and named by ``rota check``."""

    @property
    def is_final(self) -> bool:
        return self in FINAL_STATES

    @classmethod
    def stored(cls, text: str) -> JobState:
        """The state a row's ``text`` names; ``UNKNOWN`` for text naming none of rota's."""
        try:
            return cls(text)
        except ValueError:
            return cls.UNKNOWN

    def __str__(self) -> str:
        return self.value

    __hash__ = str.__hash__
    """Hash as the plain string, so ``counts["failed"]`` and ``counts[JobState.FAILED]`` agree."""


FINAL_STATES = frozenset({JobState.SUCCEEDED, JobState.FAILED, JobState.CANCELLED})
STORED_STATES = tuple(state for state in JobState if state is not JobState.UNKNOWN)
"""The states rota writes."""
LIVE_STATES = (JobState.PENDING, JobState.PAUSED, JobState.RUNNING, JobState.WAITING)
"""The states of a job yet to end: listed by ``rota.jobs()``, cancelled at once or asked to
stop, reached by a signal."""


def seen_state(state: JobState, queue: str, paused_queues: Collection[str]) -> JobState:
    """The state a reader is shown: a pending job of a paused queue is ``paused``, since no
    worker claims it (its row stays ``pending``, so resuming the queue needs no write per job)."""
    if state is JobState.PENDING and queue in paused_queues:
        return JobState.PAUSED
    return state


@dataclass(frozen=True, slots=True)
class AttemptError:
    """What one failed attempt left behind; stored on the job, oldest first."""

    attempt: int
    at: datetime
    code: str
    type: str
    message: str
    traceback: str = ""
    worker: str | None = None
    """The worker that ran the attempt (its lease owner), when one did."""

    def to_json(self) -> dict[str, Any]:
        data = {
            "attempt": self.attempt,
            "at": self.at.isoformat(),
            "code": self.code,
            "type": self.type,
            "message": self.message,
            "traceback": self.traceback,
        }
        return data if self.worker is None else {**data, "worker": self.worker}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> AttemptError:
        return cls(
            attempt=int(data["attempt"]),
            at=datetime.fromisoformat(data["at"]),
            code=str(data["code"]),
            type=str(data["type"]),
            message=str(data["message"]),
            traceback=str(data.get("traceback", "")),
            worker=None if data.get("worker") is None else str(data["worker"]),
        )


@dataclass(frozen=True, slots=True)
class NewJob:
    """A job about to be written; ``payload`` is already-validated JSON."""

    task: str
    payload: str
    run_at: datetime
    queue: str = "default"
    priority: int = 0
    max_attempts: int | None = None
    schedule: str | None = None
    scheduled_at: datetime | None = None
    manual: bool = False
    """A run of ``schedule`` asked for by hand (``run_now``), at ``scheduled_at``: not a tick."""
    unique_key: str | None = None
    depends_on: tuple[int, ...] = ()
    after: tuple[int, ...] = ()
    """Jobs this one waits for, whatever their end (``queue(after=...)``)."""
    batch_id: int | None = None
    concurrency_key: str | None = None
    """The key of the task's ``concurrency_limit``, resolved at enqueue (``None``: no limit)."""
    rate_key: str | None = None
    """The key of the task's ``rate_limit``, resolved at enqueue (``None``: no limit)."""
    tags: tuple[str, ...] = ()
    meta: str | None = None
    """``meta`` as checked JSON text."""
    unique_for: int | None = None
    """Seconds the unique key stays taken after the job finished."""
    debounce: int | None = None
    """Seconds a new call with the same unique key moves a pending holder's ``run_at`` to."""
    replay_of: int | None = None


@dataclass(frozen=True, slots=True)
class Progress:
    """How far a running job says it is: a fraction in [0, 1] and an optional short note."""

    fraction: float
    note: str | None = None


@dataclass(frozen=True, slots=True)
class ProgressReport:
    """The latest progress of one attempt that the worker has not written yet; the heartbeat
    writes it only while that attempt still holds the job."""

    job_id: int
    attempt: int
    progress: Progress


@dataclass(frozen=True, slots=True)
class JobRef:
    """What an announcement names of a job (``observe.events``): enough to find it and say
    what it is, not its arguments; a ``Job`` has the same fields."""

    id: int
    task: str
    queue: str
    attempt: int
    schedule: str | None = None


@dataclass(frozen=True, slots=True)
class Job:
    """One persisted request to run a task, as the database holds it.

    ``max_attempts`` is ``None`` when the job was queued by name from a process that does not
    define the task: the claiming worker's definition then decides.
    """

    id: int
    task: str
    queue: str
    args: tuple[Any, ...]
    kwargs: dict[str, Any]
    state: JobState
    attempt: int
    max_attempts: int | None
    priority: int
    run_at: datetime
    created_at: datetime
    started_at: datetime | None = None
    finished_at: datetime | None = None
    schedule: str | None = None
    scheduled_at: datetime | None = None
    manual: bool = False
    """A manual run of ``schedule``: ``scheduled_at`` is the moment it was asked for."""
    errors: tuple[AttemptError, ...] = ()
    lease_owner: str | None = None
    """The worker holding the job's lease while it runs; once it is final, the worker of its
    last attempt (a job given back to ``pending`` has none)."""
    lease_until: datetime | None = None
    cancel_requested: bool = False
    unique_key: str | None = None
    trace: str | None = None
    result: Any = None
    """The handler's return value (JSON) once the job succeeded."""
    progress: Progress | None = None
    depends_on: tuple[int, ...] = ()
    snoozes: int = 0
    concurrency_key: str | None = None
    rate_key: str | None = None
    payload_error: str | None = None
    """Why the stored row cannot be read (arguments written by a newer rota; arguments, errors
    or priority edited by hand): such a job is still listed, and fails with
    ``INVALID_ARGUMENTS`` instead of running."""
    unknown_state: str | None = None
    """The row's state when it names none this rota knows (``state`` is then ``UNKNOWN``):
    such a job is listed with it, and left alone."""
    namespace: str = DEFAULT_NAMESPACE
    """The service the job belongs to (``Rota(namespace=...)``): only its workers claim it."""
    waiting_for: str | None = None
    """The signal a ``waiting`` job waits for (its ``run_at``: until when), kept until the run
    it wakes to takes the signal or finds the wait timed out."""
    batch_id: int | None = None
    """The batch (``rota.batch``) the job belongs to, as one of its jobs or a callback."""
    tags: tuple[str, ...] = ()
    meta: dict[str, Any] | None = None
    replay_of: int | None = None
    """The finished job this one replays (``rota.replay``)."""
    stuck: bool = False
    """Running past its timeout and margin or ``stuck_after`` while its lease is renewed
    (``job.stuck`` was announced for this attempt)."""


@dataclass(frozen=True, slots=True)
class WorkerInfo:
    """A live worker process as it registered itself in ``rota_workers``."""

    id: str
    host: str
    pid: int
    queues: tuple[str, ...]
    tasks: tuple[str, ...]
    concurrency: int
    started_at: datetime
    heartbeat_at: datetime
    task_queues: dict[str, str] = field(default_factory=dict)
    heartbeat_seconds: float | None = None
    """The worker's heartbeat interval (a third of its lease); ``None`` in rows of older rotas."""
    definitions: dict[str, str] = field(default_factory=dict)
    """A fingerprint of each task as the worker defines it (``TaskDefinition.fingerprint``), so
    that two live workers of one namespace that define a task differently are reported; empty
    in rows of older rotas."""

    @property
    def live_until(self) -> datetime:
        """When the worker is taken for dead unless it heartbeats again: after two missed
        heartbeats, so that one slow heartbeat does not make a live worker look dead."""
        if self.heartbeat_seconds is None:
            return self.heartbeat_at + LIVE_WORKER_WINDOW
        return self.heartbeat_at + timedelta(seconds=MISSED_HEARTBEATS * self.heartbeat_seconds)

    def is_live(self, now: datetime) -> bool:
        return self.live_until >= now


@dataclass(frozen=True, slots=True)
class JobStatus:
    """One line of ``Rota.jobs()``: a schedule, or a pending, paused or running job.

    ``status`` is the schedule's or job's state; a pending job in a paused queue is
    ``"paused"``, since no worker claims it until the queue is resumed.
    """

    id: int | str
    name: str
    cron: str | None
    status: str
    last_run: datetime | None
    next_run: datetime | None
    runs: int
    failures: int
    progress: Progress | None = None
    """A running job's latest reported progress (``None`` for schedules and other jobs)."""
    tz: str | None = None
    """A schedule's time zone."""
    code_cron: str | None = None
    """While a code schedule is overridden, the code's cron (``cron`` is the override's)."""
    code_tz: str | None = None
    failing: bool = False
    """The schedule's last ``alert_after_failures`` ticks failed."""


FINISHED_WINDOW = timedelta(hours=24)
"""How far back the figures read on every page view or scrape reach for finished jobs: the
dashboard's counts and chart, the metrics, a schedule's runs and failures.  Reading every
finished job ever kept there would read the whole history (millions of rows) each time; the
last day's counts and chart are read from hour tallies and, for the hour or two beside them,
from an index (``store.windows``), a cost that grows with the jobs finished per hour, not with
retention; a schedule's runs and failures from the index of its ticks.  ``Rota.counts()``
counts every job instead."""


FOLD_LAG = timedelta(hours=1)
"""How long ago a job must have finished before it is folded into the tallies that exact
counts read instead of the finished jobs' rows: far beyond any clock skew or commit delay
between a worker's clock and its write, so a job finishing late never lands behind the fold."""


@dataclass(frozen=True, slots=True)
class Counts:
    """Job counts from ``Rota.counts()``, every state present (zero when none).

    ``by_state`` maps a state to its count; ``by_queue`` and ``by_task`` map a queue or task
    name to such a mapping. Keys are the states' strings (``JobState`` members look up alike).
    A pending job of a paused queue counts as ``paused``; a job whose stored state rota does not
    know counts as ``unknown``, a key present only when there is one.  ``finished_since`` is
    ``None`` when every job is counted (``Rota.counts()``); otherwise finished jobs (succeeded,
    failed, cancelled) count only if they finished at or after it (the dashboard, the
    metrics).
    """

    by_state: dict[str, int]
    by_queue: dict[str, dict[str, int]]
    by_task: dict[str, dict[str, int]]
    finished_since: datetime | None = None

    @property
    def total(self) -> int:
        return sum(self.by_state.values())

    @classmethod
    def from_rows(
        cls,
        rows: Iterable[tuple[str, str, str, int]],
        finished_since: datetime | None = None,
        paused_queues: Collection[str] = (),
    ) -> Counts:
        """From ``(state, queue, task, count)`` rows, as GROUP BY gives them."""
        by_state = _zeros()
        by_queue: dict[str, dict[str, int]] = {}
        by_task: dict[str, dict[str, int]] = {}
        for stored, queue, task, count in rows:
            state = seen_state(JobState.stored(stored), queue, paused_queues).value
            for counted in (
                by_state,
                by_queue.setdefault(queue, _zeros()),
                by_task.setdefault(task, _zeros()),
            ):
                counted[state] = counted.get(state, 0) + count
        by_queue, by_task = dict(sorted(by_queue.items())), dict(sorted(by_task.items()))
        return cls(by_state, by_queue, by_task, finished_since)


def _zeros() -> dict[str, int]:
    return {state.value: 0 for state in STORED_STATES}


@dataclass(frozen=True, slots=True)
class DrainResult:
    """What ``Rota.drain()`` did: attempts that succeeded, failed for good, will run again (a
    retry, a snooze, a durable sleep), were cancelled, or parked their job ``waiting`` for a
    signal."""

    succeeded: int = 0
    failed: int = 0
    retried: int = 0
    cancelled: int = 0
    waiting: int = 0

    @property
    def total(self) -> int:
        return self.succeeded + self.failed + self.retried + self.cancelled + self.waiting
