"""The Store contract, one suite on every backend: claims, compare-and-set, leases, rescue."""

from __future__ import annotations

import random
from datetime import datetime, timedelta

import pytest

from rota.core.backoff import RetryPolicy
from rota.core.model import JobState, NewJob
from rota.core.transitions import Outcome, OutcomeKind, after_attempt, rescue
from rota.store import SqlStore, open_store
from tests.conftest import START, Database

EMPTY = '{"v":1,"args":[],"kwargs":{}}'
LEASE = timedelta(seconds=30)


@pytest.fixture
def store(db: Database) -> SqlStore:
    store = open_store(db.url, db.prefix)
    store.migrate()
    yield store  # type: ignore[misc]
    store.dispose()


def new(task: str = "t", at: datetime = START, **options: object) -> NewJob:
    return NewJob(task=task, payload=EMPTY, run_at=at, **options)  # type: ignore[arg-type]


def claim(
    store: SqlStore,
    worker: str = "w1",
    limit: int = 10,
    now: datetime = START,
    tasks: tuple[str, ...] = ("t",),
    queues: tuple[str, ...] = ("default",),
) -> list[int]:
    return [job.id for job in store.claim(worker, queues, tasks, limit, now, now + LEASE)]


def test_claim_takes_due_jobs_by_priority_then_run_at(store: SqlStore) -> None:
    late, early, urgent, future = store.enqueue(
        [
            new(at=START - timedelta(seconds=1)),
            new(at=START - timedelta(seconds=5)),
            new(at=START, priority=-1),
            new(at=START + timedelta(seconds=1)),
        ],
        START,
    )
    assert claim(store, limit=2) == [urgent, early]
    assert claim(store) == [late]
    assert claim(store) == []
    assert claim(store, now=START + timedelta(seconds=1)) == [future]


def test_claim_only_takes_known_tasks_and_queues(store: SqlStore) -> None:
    mine, other_task, other_queue = store.enqueue(
        [new("t"), new("unknown"), new("t", queue="mail")], START
    )
    assert claim(store) == [mine]
    assert claim(store, queues=("default", "mail")) == [other_queue]
    assert claim(store, tasks=("t", "unknown")) == [other_task]


def test_claim_marks_running_with_a_lease_and_counts_the_attempt(store: SqlStore) -> None:
    (job_id,) = store.enqueue([new()], START)
    (job,) = store.claim("w1", ["default"], ["t"], 5, START, START + LEASE)
    assert (job.id, job.state, job.attempt, job.lease_owner) == (job_id, JobState.RUNNING, 1, "w1")
    assert job.lease_until == START + LEASE
    assert store.job(job_id) == job


def test_only_the_lease_holder_can_finish_a_job(store: SqlStore) -> None:
    (job_id,) = store.enqueue([new()], START)
    (job,) = store.claim("w1", ["default"], ["t"], 5, START, START + LEASE)
    done = after_attempt(
        job, Outcome(OutcomeKind.SUCCEEDED), START, RetryPolicy(), random.Random(0)
    )
    assert store.complete("zombie", [done], START) == 0
    assert store.job(job_id).state is JobState.RUNNING  # type: ignore[union-attr]
    assert store.complete("w1", [done], START) == 1
    finished = store.job(job_id)
    assert finished is not None
    assert (finished.state, finished.lease_owner, finished.finished_at) == (
        JobState.SUCCEEDED,
        None,
        START,
    )
    assert store.complete("w1", [done], START) == 0, "a final state is never left"


def test_heartbeat_renews_leases_and_reports_cancel_requests_and_lost_jobs(
    store: SqlStore,
) -> None:
    keep, cancel_me, lost = store.enqueue([new(), new(), new()], START)
    claim(store)
    assert store.cancel(cancel_me, START) is True
    later = START + timedelta(seconds=20)
    with store.engine.begin() as connection:
        jobs = store.schema.jobs
        connection.execute(jobs.update().where(jobs.c.id == lost).values(lease_owner="w2"))
    cancel, gone = store.heartbeat("w1", [keep, cancel_me, lost], later, later + LEASE)
    assert (cancel, gone) == ({cancel_me}, {lost})
    assert store.job(keep).lease_until == later + LEASE  # type: ignore[union-attr]


def test_expired_leases_are_rescued_once_and_the_late_worker_changes_nothing(
    store: SqlStore,
) -> None:
    (job_id,) = store.enqueue([new(max_attempts=3)], START)
    (job,) = store.claim("w1", ["default"], ["t"], 5, START, START + LEASE)
    assert store.expired_leases(START + LEASE, 10) == []
    after = START + LEASE + timedelta(seconds=1)
    (expired,) = store.expired_leases(after, 10)
    back = rescue(expired, after, RetryPolicy(), random.Random(0))
    assert store.rescue([back], after) == 1
    assert store.rescue([back], after) == 0
    rescued = store.job(job_id)
    assert rescued is not None
    assert (rescued.state, rescued.attempt, rescued.lease_owner) == (JobState.PENDING, 1, None)
    assert rescued.errors[-1].code == "LEASE_EXPIRED"
    late = after_attempt(
        job, Outcome(OutcomeKind.SUCCEEDED), after, RetryPolicy(), random.Random(0)
    )
    assert store.complete("w1", [late], after) == 0
    (again,) = store.claim("w2", ["default"], ["t"], 5, after, after + LEASE)
    assert again.attempt == 2


def test_cancel_answers_for_pending_running_finished_and_missing(store: SqlStore) -> None:
    pending, running = store.enqueue([new(), new(at=START - timedelta(seconds=1))], START)
    claim(store, limit=1)
    assert store.cancel(pending, START) is True
    assert store.job(pending).state is JobState.CANCELLED  # type: ignore[union-attr]
    assert store.cancel(running, START) is True
    assert store.job(running).cancel_requested  # type: ignore[union-attr]
    assert store.cancel(pending, START) is False
    assert store.cancel(10**9, START) is None


def test_bulk_enqueue_returns_ids_in_order(store: SqlStore) -> None:
    ids = store.enqueue([new(priority=n) for n in range(2500)], START)
    assert ids == sorted(ids)
    assert len(set(ids)) == 2500
    assert [store.job(i).priority for i in ids[::500]] == [0, 500, 1000, 1500, 2000]  # type: ignore[union-attr]


def test_counts_per_state_and_queue(store: SqlStore) -> None:
    store.enqueue([new(), new(), new(queue="mail"), new(at=START - timedelta(seconds=1))], START)
    claim(store, limit=1)
    counts = store.counts()
    assert (counts.by_state["running"], counts.by_state["pending"], counts.total) == (1, 3, 4)
    assert counts.by_state[JobState.FAILED] == 0
    assert {queue: states["pending"] for queue, states in counts.by_queue.items()} == {
        "default": 2,
        "mail": 1,
    }
    assert counts.by_queue["default"]["running"] == 1
    assert {task: states["pending"] for task, states in counts.by_task.items()} == {"t": 3}
