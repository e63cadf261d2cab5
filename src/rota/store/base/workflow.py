"""``store.workflow``: a job's saved workflow steps (``ctx.step``, ``ctx.sleep``) and its
mailbox of signals (``rota.signal``, ``ctx.wait_for``); ``store.batches``: batches of jobs
with their callbacks (``rota.batch``)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Protocol

from rota.core.model import NewJob
from rota.core.workflow import BatchStatus, Step
from rota.store.values import QueuedBatch, Taken


class WorkflowStore(Protocol):
    def saved(self, job_id: int) -> list[Step]:
        """The job's saved steps, in the order they were saved; none for an unknown job."""
        ...

    def save(
        self,
        job_id: int,
        owner: str,
        attempt: int,
        name: str,
        result: str | None,
        now: datetime,
    ) -> bool:
        """Save a finished step (``result``: its value as JSON, ``None`` for JSON null),
        fenced by the lease: only while the job is ``running`` at ``attempt`` under ``owner``'s
        lease, and committed before this returns. ``False``, nothing written, when the lease is
        no longer held (the job was rescued, cancelled or claimed again meanwhile)."""
        ...

    def take(
        self,
        job_id: int,
        owner: str,
        attempt: int,
        signal: str,
        name: str,
        now: datetime,
        timed_out: bool = False,
    ) -> Taken | None:
        """Take the oldest untaken ``signal`` sent to the job and save it as the wait's step
        ``name``, fenced as ``save`` is; with none there and the wait ``timed_out``, save the
        step as ``None`` (found, no payload) in the same transaction, so that the timeout is
        never lost to a later failure. ``None`` when the lease is no longer held."""
        ...

    def signal(
        self,
        job_ids: Sequence[int],
        unique_key: tuple[Sequence[str], str] | None,
        signal: str,
        payload: str | None,
        now: datetime,
    ) -> bool:
        """Send ``signal`` with ``payload`` (JSON) to the live jobs ``job_ids``, or to those
        of the tasks holding the ``unique_key`` (tasks, key); a job waiting for it is pending
        again at ``now``. Whether any live job was found."""
        ...

    def wake_timed_out(self, now: datetime, limit: int) -> int:
        """Make pending up to ``limit`` waiting jobs whose timeout has passed; how many."""
        ...


class BatchStore(Protocol):
    def queue(
        self,
        members: Sequence[NewJob],
        on_success: NewJob | None,
        on_complete: NewJob | None,
        now: datetime,
    ) -> QueuedBatch:
        """Write a batch's jobs and its callbacks in one transaction: ``on_success`` depending
        on every job, ``on_complete`` waiting for every job whatever its end."""
        ...

    def status(self, batch_id: int) -> BatchStatus | None:
        """The batch's jobs counted by state; ``None`` for no such batch."""
        ...

    def prune(self, before: datetime, limit: int) -> int:
        """Delete up to ``limit`` batches made before ``before`` whose jobs were all pruned;
        how many."""
        ...
