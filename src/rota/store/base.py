"""The storage seam: one method per operation, each taking ``now`` instead of reading a clock.

Methods are synchronous and thread-safe; the runtime calls them from its database threads so
the event loop never waits on a socket.  Every method translates driver errors into
``StoreError`` (``TransientStoreError`` when a plain retry can succeed).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Protocol

from rota.core.model import (
    Counts,
    Job,
    JobState,
    NewJob,
    Schedule,
    ScheduleSpec,
    ScheduleState,
    ScheduleStats,
    WorkerInfo,
)
from rota.core.transitions import Transition


class Store(Protocol):
    @property
    def schedules(self) -> ScheduleStore: ...

    def enqueue(self, jobs: Sequence[NewJob], now: datetime) -> list[int]:
        """Insert jobs as ``pending``, all or none; return their ids in the order given."""
        ...

    def claim(
        self,
        worker_id: str,
        queues: Sequence[str],
        tasks: Sequence[str],
        limit: int,
        now: datetime,
        lease_until: datetime,
    ) -> list[Job]:
        """Move up to ``limit`` due pending jobs of ``tasks`` in ``queues`` to ``running``.

        Queues paused with ``set_queues_paused`` are skipped, read in the same transaction.
        Due means ``run_at <= now``; order is priority, then ``run_at``, then id.  Each claimed
        job's attempt is incremented and its lease given to ``worker_id`` until
        ``lease_until``.  Concurrent callers never receive the same job.
        """
        ...

    def complete(self, worker_id: str, transitions: Sequence[Transition], now: datetime) -> int:
        """Apply the transitions of jobs ``worker_id`` holds, in one transaction.

        Each one applies only if its job is still ``running`` under that worker's lease; the
        count of those that applied is returned.
        """
        ...

    def heartbeat(
        self, worker_id: str, job_ids: Sequence[int], now: datetime, lease_until: datetime
    ) -> tuple[set[int], set[int]]:
        """Renew the worker's row and the leases of its running jobs.

        Returns ``(cancel_requested, lost)``: jobs someone asked to cancel, and jobs no longer
        held by this worker (rescued after an expired lease, say).
        """
        ...

    def expired_leases(self, now: datetime, limit: int) -> list[Job]:
        """Running jobs whose lease ended before ``now``, oldest lease first."""
        ...

    def rescue(self, transitions: Sequence[Transition], now: datetime) -> int:
        """Apply rescue transitions to jobs whose lease is still expired; return how many."""
        ...

    def counts(self) -> Counts:
        """Exact job counts by state, by queue and by task."""
        ...

    def job(self, job_id: int) -> Job | None: ...

    def jobs(
        self,
        states: Sequence[JobState] = (),
        task: str | None = None,
        queue: str | None = None,
        limit: int | None = 100,
    ) -> list[Job]:
        """Newest first; ``limit=None`` lists them all."""
        ...

    def cancel(self, job_id: int, now: datetime) -> bool | None:
        """Cancel a pending or paused job, or ask the worker of a running one to cancel it.

        ``True`` when done or asked, ``False`` when the job had already finished, ``None``
        when there is no such job.
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

    def register_worker(self, worker: WorkerInfo) -> None: ...

    def unregister_worker(self, worker_id: str) -> None: ...

    def workers(self, alive_since: datetime) -> list[WorkerInfo]: ...

    def server_time(self) -> datetime | None:
        """The database server's clock (UTC), or ``None`` where it is this host's (SQLite)."""
        ...


class ScheduleStore(Protocol):
    """Schedules by name; ``fire`` is the only way ticks become jobs."""

    def upsert(self, spec: ScheduleSpec, first_run: datetime, now: datetime) -> Schedule:
        """Create by name or update the definition; a changed cron or tz, or a disabled
        schedule coming back, restarts at ``first_run``.  Never creates a second row."""
        ...

    def get(self, name: str) -> Schedule | None: ...

    def all(self, states: Sequence[ScheduleState] = ()) -> list[Schedule]: ...

    def due(self, now: datetime, limit: int) -> list[Schedule]:
        """Active schedules whose ``next_run_at <= now``, earliest first."""
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
        self, name: str | None, target: ScheduleState, sources: Sequence[ScheduleState]
    ) -> int: ...

    def resume(self, next_runs: Mapping[str, datetime], now: datetime) -> int: ...

    def disable(self, names: Sequence[str], now: datetime) -> int: ...

    def stats(self) -> dict[str, ScheduleStats]: ...
