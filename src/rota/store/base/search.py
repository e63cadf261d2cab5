"""Finding jobs by a ``Filter`` (``SearchStore``) and changing them by hand (``EditStore``):
what ``rota.find``, ``rota.count``, the bulk actions, ``update_job`` and ``replay`` need."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any, Protocol

from rota.core.model import Job
from rota.core.search import BulkAction, Filter


class SearchStore(Protocol):
    def find(
        self, matching: Filter, limit: int, before: int | None
    ) -> tuple[list[Job], int | None]:
        """Up to ``limit`` matching jobs below id ``before``, newest first, with their tags,
        and the id the next page starts below (``None``: none is left)."""
        ...

    def matching(
        self, matching: Filter, limit: int, before: int | None
    ) -> tuple[list[int], int | None]:
        """``find``'s ids alone: a bulk action's batch."""
        ...

    def count(self, matching: Filter) -> int: ...

    def bulk_actions(self, limit: int) -> list[BulkAction]:
        """The latest bulk actions of the namespace, newest first."""
        ...


class EditStore(Protocol):
    def update(
        self, job_id: int, values: Mapping[str, Any], tags: Sequence[str] | None
    ) -> bool | None:
        """Change a pending or paused job; ``False`` once claimed, ``None`` for no such job."""
        ...

    def replay(self, job_id: int, now: datetime) -> int | None:
        """A copy of a final job, queued now; ``None`` unless the job exists and is final."""
        ...

    def record(
        self, action: str, matching: Mapping[str, Any], actor: str, count: int, now: datetime
    ) -> None: ...
