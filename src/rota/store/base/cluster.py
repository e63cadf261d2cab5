"""The cluster's shared state: live workers, named leases (one holder at a time), paused
queues."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Protocol

from rota.core.model import WorkerInfo


class ClusterStore(Protocol):
    """``store.cluster``: what every worker reads of the others, and the leases they share."""

    def register_worker(self, worker: WorkerInfo) -> None: ...

    def unregister_worker(self, worker_id: str) -> None: ...

    def workers(self, alive_at: datetime) -> list[WorkerInfo]:
        """Workers live at ``alive_at`` (``WorkerInfo.is_live``: their last heartbeat is
        within two of their heartbeat intervals), by id."""
        ...

    def prune_workers(self, before: datetime) -> int:
        """Delete the rows of workers whose last heartbeat is older than ``before``; how many."""
        ...

    def acquire_lease(self, name: str, owner: str, now: datetime, until: datetime) -> bool:
        """Take or renew the lease ``name`` for ``owner`` unless someone else holds it."""
        ...

    def set_queues_paused(self, names: Sequence[str], paused: bool, now: datetime) -> list[str]:
        """Pause or resume queues (persisted; ``claim`` skips paused ones); the names changed."""
        ...

    def paused_queues(self) -> set[str]: ...

    def namespaces(self) -> list[str]:
        """The namespaces that have a schedule, a worker's row or a paused queue here, sorted:
        the services a tool may offer to show (the jobs table is not read: too large)."""
        ...
