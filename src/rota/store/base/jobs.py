"""The writes of a job's life, each applied only while the job is still where the caller read
it: a compare-and-set per row, so two workers, a rescue and a cancel never both win."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Protocol, TypeAlias

from rota.core.limits import FlowLimits
from rota.core.model import Counts, Job, JobRef, JobState, NewJob, ProgressReport
from rota.core.transitions import Transition
from rota.store.values import Applied, Pruned

if TYPE_CHECKING:
    from sqlalchemy.engine import Connection

CallerConnection: TypeAlias = "Connection"
"""A transaction the caller holds open (a SQLAlchemy ``Connection`` inside ``begin()``), for
``queue(connection=...)``: the jobs it receives exist only if that transaction commits."""


class JobStore(Protocol):
    """``store.jobs``: enqueue, claim, finish, renew, rescue and cancel jobs."""

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

    def cancel(self, job_id: int, now: datetime) -> Applied | None:
        """Cancel a pending or paused job, or ask the worker of a running one to cancel it.

        ``Applied`` names the job in ``job_ids`` when it was cancelled (its dependents cancelled
        with it in ``cascaded``), in ``requested`` when its worker was asked; it is empty when
        the job had already finished, and ``None`` when there is no such job.
        """
        ...

    def cancel_many(self, job_ids: Sequence[int], now: datetime) -> tuple[Applied, list[JobRef]]:
        """``cancel`` of several jobs in one transaction (a bulk action's batch), and the jobs
        it reached, as they were."""
        ...

    def move_many(self, job_ids: Sequence[int], source: JobState, target: JobState) -> list[JobRef]:
        """The jobs of ``job_ids`` still in ``source``, moved to ``target`` (a bulk pause or
        resume)."""
        ...

    def set_job_state(self, job_id: int, source: JobState, target: JobState) -> bool | None:
        """Move a job from ``source`` to ``target`` if it is still in ``source``.

        ``True`` when moved, ``False`` when the job is in another state, ``None`` when there is
        no such job.
        """
        ...

    def prune_limits(self, before: datetime, limit: int) -> int:
        """Delete up to ``limit`` flow-limit key rows last written before ``before``."""
        ...


class FinishedStore(Protocol):
    """``store.finished``: jobs that ended, retried, pruned, or folded into the tallies that
    keep ``counts`` exact after their rows are gone."""

    def counts(self, finished_since: datetime | None = None) -> Counts:
        """Job counts by state, by queue and by task (``Counts``, a pending job of a paused
        queue as ``paused``): every job, or every live job and those that finished at or after
        ``finished_since``, read from the hour tallies and an index."""
        ...

    def retry(self, job_ids: Sequence[int], now: datetime) -> list[JobRef]:
        """Failed or cancelled jobs back to pending with a fresh budget, history kept (a
        compare-and-set on their state); the jobs it moved, as they were."""
        ...

    def delete(self, job_ids: Sequence[int]) -> list[JobRef]:
        """Delete the jobs that are neither running nor waiting, and what is kept beside them;
        the jobs deleted, as they were."""
        ...

    def prune(
        self,
        states: Sequence[JobState],
        before: datetime,
        limit: int,
        after: datetime | None = None,
    ) -> Pruned:
        """Delete the oldest ``limit`` jobs of ``states`` finished after ``after`` and before
        ``before`` (more when several finished at the same instant as the last of them, fewer
        when the UTC hour of the oldest ends first: a batch is off one hour's tallies)."""
        ...

    def fold(self, until: datetime) -> int:
        """Fold the jobs finished before ``until`` into the tallies that ``counts()`` reads
        instead of their rows; how many were folded."""
        ...
