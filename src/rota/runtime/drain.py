"""Drain: run every due job in the calling process until none is left, then report the counts."""

from __future__ import annotations

import asyncio
import uuid
from collections import Counter
from collections.abc import Sequence

from rota.core.model import DrainResult, JobState
from rota.core.transitions import lease_until
from rota.runtime.executor import Executor
from rota.runtime.maintenance import rescue_expired
from rota.store.base import Store

RESCUE_BATCH = 1_000


async def drain(
    store: Store,
    executor: Executor,
    queues: Sequence[str],
    concurrency: int,
    lease_seconds: float,
) -> DrainResult:
    """Claim and run batches of due jobs as a worker would, without its background loops.

    Jobs whose lease expired by the clock's ``now`` are rescued first.  A retry whose back-off
    ends after ``now`` is not due, so a test advances its fake clock and drains again.
    """
    worker_id = f"drain:{uuid.uuid4().hex[:12]}"
    loop = asyncio.get_running_loop()
    outcomes: Counter[JobState] = Counter()
    tasks = executor.registry.names()
    await asyncio.to_thread(
        rescue_expired, store, executor, executor.events, executor.clock.now(), RESCUE_BATCH
    )
    while True:
        now = executor.clock.now()
        until = lease_until(now, lease_seconds)
        jobs = await asyncio.to_thread(
            store.claim, worker_id, queues, tasks, concurrency, now, until
        )
        if not jobs:
            break
        finished = await asyncio.gather(*(executor.run(job, loop.create_future()) for job in jobs))
        transitions = [item.transition for item in finished]
        await asyncio.to_thread(store.complete, worker_id, transitions, executor.clock.now())
        outcomes.update(transition.target for transition in transitions)
    return DrainResult(
        succeeded=outcomes[JobState.SUCCEEDED],
        failed=outcomes[JobState.FAILED],
        retried=outcomes[JobState.PENDING],
        cancelled=outcomes[JobState.CANCELLED],
    )
