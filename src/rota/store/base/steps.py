"""``store.steps``: a job's saved workflow steps (``ctx.step``, ``ctx.sleep``)."""

from __future__ import annotations

from datetime import datetime
from typing import Protocol

from rota.core.steps import Step


class StepStore(Protocol):
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
