"""The part of ``Rota``'s façade that concerns durable workflows: a job's saved steps, and
signals to jobs waiting in ``ctx.wait_for`` (``runtime.services.workflows``)."""

from __future__ import annotations

from typing import Any

from rota.core.steps import Step
from rota.runtime.services.workflows import Workflows


class WorkflowCalls:
    _workflows: Workflows

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
