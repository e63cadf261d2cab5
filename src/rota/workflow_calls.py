"""The part of ``Rota``'s façade that concerns durable workflows: a job's saved steps, signals
to jobs waiting in ``ctx.wait_for`` (``runtime.services.workflows``), and batches of jobs with
their callbacks (``runtime.services.queueing``)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from rota.core.workflow import Batch, BatchStatus, Step
from rota.enqueue import Enqueue
from rota.runtime.services.queueing import Enqueuing
from rota.runtime.services.workflows import Workflows


class WorkflowCalls:
    _workflows: Workflows
    _enqueuing: Enqueuing

    def batch(
        self,
        jobs: Iterable[Enqueue],
        *,
        on_success: Enqueue | None = None,
        on_complete: Enqueue | None = None,
    ) -> Batch:
        """Queue ``jobs`` (at most 1,000) and the callbacks in one transaction: ``on_success``
        runs once every job succeeded (else it is cancelled, ``DEPENDENCY_FAILED``),
        ``on_complete`` once every job is final, whatever its state; their ``ctx.batch`` is the
        batch's id."""
        return self._enqueuing.batch(list(jobs), on_success, on_complete)

    def batch_status(self, batch_id: int) -> BatchStatus:
        """The batch's jobs counted by state and whether all have ended; ``JobNotFound`` for
        no such batch."""
        return self._workflows.batch_status(batch_id)

    def steps(self, job_id: int) -> list[Step]:
        """The job's saved workflow steps, oldest first; ``JobNotFound`` if there is no job."""
        return self._workflows.steps(job_id)

    def signal(
        self, job: int | str, signal: str, payload: Any = None, *, task: str | None = None
    ) -> bool:
        """Send ``signal`` with a JSON ``payload`` to the job ``job`` (an id), or to the live
        jobs holding the unique key ``job`` (of ``task``; else of any task this process
        registered): kept for the job's ``ctx.wait_for(signal)``, waking the job if it waits
        for it. ``False`` when no such job is live (unknown, or finished)."""
        return self._workflows.signal(job, signal, payload, task)
