"""Jobs and workers to write, and the transitions a worker would apply, for the contract."""

from __future__ import annotations

import random
from collections.abc import Iterator, Sequence
from datetime import datetime, timedelta

from rota.core.backoff import RetryPolicy
from rota.core.model import DEFAULT_QUEUE, AttemptError, Job, JobState, NewJob, WorkerInfo
from rota.core.transitions import Transition, Verdict, VerdictKind, after_attempt
from rota.store import Store
from rota.store.values import Pruned
from tests.conftest import START

EMPTY = '{"v":1,"args":[],"kwargs":{}}'
LEASE = timedelta(seconds=30)


def new(
    task: str = "t",
    at: datetime = START,
    *,
    queue: str = DEFAULT_QUEUE,
    priority: int = 0,
    max_attempts: int | None = None,
    unique_key: str | None = None,
    schedule: str | None = None,
    scheduled_at: datetime | None = None,
) -> NewJob:
    return NewJob(
        task=task,
        payload=EMPTY,
        run_at=at,
        queue=queue,
        priority=priority,
        max_attempts=max_attempts,
        unique_key=unique_key,
        schedule=schedule,
        scheduled_at=scheduled_at,
    )


def claim(
    store: Store,
    worker: str = "w1",
    limit: int = 10,
    now: datetime = START,
    tasks: tuple[str, ...] = ("t",),
    queues: tuple[str, ...] = (DEFAULT_QUEUE,),
) -> list[int]:
    return [job.id for job in store.jobs.claim(worker, queues, tasks, limit, now, now + LEASE)]


def claimed(store: Store, job_id: int, worker: str = "w1", now: datetime = START) -> Job:
    """Claim ``job_id``, which must be the first due job of its task in its queue."""
    job = store.reads.job(job_id)
    assert job is not None
    (running,) = store.jobs.claim(worker, [job.queue], [job.task], 1, now, now + LEASE)
    assert running.id == job_id
    return running


def state(store: Store, job_id: int) -> JobState | None:
    job = store.reads.job(job_id)
    return job.state if job is not None else None


def outcome(job: Job, kind: VerdictKind, now: datetime = START) -> Transition:
    error = None
    if kind is not VerdictKind.SUCCEEDED:
        error = AttemptError(job.attempt, now, "EXECUTION_FAILED", "ValueError", "boom")
    result = Verdict(kind, error=error, retryable=False)
    return after_attempt(job, result, now, RetryPolicy(), random.Random(0))


def batches(
    store: Store, states: Sequence[JobState], before: datetime, limit: int = 100
) -> Iterator[Pruned]:
    """The prune's batches, each going on past the last, until one reaches ``before``: what
    deleting everything of ``states`` finished before it takes, a batch stopping at each hour."""
    after = None
    while True:
        pruned = store.finished.prune(states, before, limit, after)
        yield pruned
        if pruned.through is None:
            return
        after = pruned.through


def worker(
    worker_id: str,
    heartbeat_at: datetime = START,
    tasks: dict[str, str] | None = None,
    queues: tuple[str, ...] = (DEFAULT_QUEUE,),
    heartbeat_seconds: float | None = None,
) -> WorkerInfo:
    task_queues = tasks if tasks is not None else {"t": DEFAULT_QUEUE}
    return WorkerInfo(
        id=worker_id,
        host="host",
        pid=1,
        queues=queues,
        tasks=tuple(task_queues),
        concurrency=2,
        started_at=heartbeat_at,
        heartbeat_at=heartbeat_at,
        task_queues=task_queues,
        heartbeat_seconds=heartbeat_seconds,
    )
