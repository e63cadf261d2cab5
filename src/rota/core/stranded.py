"""Pending jobs no live worker can claim: what ``rota check`` and the dashboard flag."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from rota.core.model import WorkerInfo


def claimable(workers: Sequence[WorkerInfo]) -> set[tuple[str, str]]:
    """The (task, queue) pairs some worker both registers and serves."""
    return {(task, queue) for w in workers for task in w.tasks for queue in w.queues}


@dataclass(frozen=True, slots=True)
class Stranded:
    """Pending jobs of one task and queue that no live worker can claim, and why.

    ``rota check`` and the dashboard flag them: a job queued by name for a task that no
    deployed worker registers would otherwise wait unseen.
    """

    task: str
    queue: str
    pending: int
    reason: str

    @classmethod
    def among(
        cls, pending: Iterable[tuple[str, str, int]], workers: Sequence[WorkerInfo]
    ) -> list[Stranded]:
        """The ``(task, queue, count)`` groups of pending jobs none of ``workers`` can claim,
        sorted by task and queue."""
        ready = claimable(workers)
        registered = {task for worker in workers for task in worker.tasks}
        return [
            cls(
                task,
                queue,
                count,
                "no live worker registers the task"
                if task not in registered
                else "no live worker with the task serves the queue",
            )
            for task, queue, count in sorted(pending)
            if (task, queue) not in ready
        ]
