"""What one worker is told: its pools of slots, its polling, leases and housekeeping.

``Rota``'s settings (``RotaConfig``) give the values; ``Lifecycle`` builds them per process,
narrowed by ``rota worker --queues`` / ``--concurrency``.
"""

from __future__ import annotations

import os
import socket
from dataclasses import dataclass, field
from datetime import datetime

from rota.core.connection import DEFAULT_NAMESPACE
from rota.core.model import WorkerInfo
from rota.runtime.retention import Retention
from rota.tasks import TaskRegistry


@dataclass(frozen=True)
class Pool:
    """Queues that share ``limit`` concurrent jobs; a queue with its own limit is a pool."""

    queues: tuple[str, ...]
    limit: int


@dataclass(frozen=True)
class WorkerSettings:
    """How one worker runs; ``Rota``'s settings (``RotaConfig``) give the values."""

    pools: tuple[Pool, ...]
    poll_interval: float
    lease_seconds: float
    busy_poll: float = 0.05
    rescue_batch: int = 100
    prune_interval: float = 60.0
    retention: Retention = field(default_factory=Retention)
    max_backoff: float = 30.0
    alert_after_failures: int | None = None
    """The ``Rota``'s default; tasks may set their own."""
    database: str = ""
    """Which database, password left out (``describe_url``), and ``table_prefix``: the start
    line names them so that a worker started on the wrong tables is seen at once."""
    table_prefix: str = ""
    namespace: str = DEFAULT_NAMESPACE

    @property
    def queues(self) -> tuple[str, ...]:
        return tuple(queue for pool in self.pools for queue in pool.queues)

    @property
    def concurrency(self) -> int:
        return sum(pool.limit for pool in self.pools)

    def describe(self, worker_id: str, registry: TaskRegistry, now: datetime) -> WorkerInfo:
        """The row a worker registers with these settings and ``registry``'s tasks."""
        return WorkerInfo(
            id=worker_id,
            host=socket.gethostname(),
            pid=os.getpid(),
            queues=self.queues,
            tasks=tuple(registry.names()),
            task_queues={task.name: task.queue for task in registry},
            concurrency=self.concurrency,
            started_at=now,
            heartbeat_at=now,
            heartbeat_seconds=self.lease_seconds / 3,
            definitions={task.name: task.description for task in registry},
        )
