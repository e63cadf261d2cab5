"""A job's life through the protocol: enqueue, claim, complete, heartbeat, rescue, cancel,
pause, retry, prune, and what inspection counts."""

from __future__ import annotations

import random
import threading
from datetime import timedelta

import pytest

from rota.core.backoff import RetryPolicy
from rota.core.model import JobState
from rota.core.transitions import VerdictKind, rescue
from rota.errors import InvalidArguments
from rota.store import Store
from rota.store.values import Applied, Pruned
from tests.conftest import START, Database
from tests.store.contract.support import LEASE, batches, claim, claimed, new, outcome, state

SECOND = timedelta(seconds=1)


def test_enqueue_returns_ids_in_the_order_given_even_in_bulk(store: Store) -> None:
    ids = store.jobs.enqueue([new(priority=n) for n in range(2500)], START)
    assert ids == sorted(ids)
    assert len(set(ids)) == 2500
    priorities = [job.priority for i in ids[::500] if (job := store.reads.job(i)) is not None]
    assert priorities == [0, 500, 1000, 1500, 2000]


def test_enqueue_reuses_the_live_job_of_a_unique_key_per_task(store: Store) -> None:
    first, again, other_task = store.jobs.enqueue(
        [new(unique_key="k"), new(unique_key="k"), new("u", unique_key="k")], START
    )
    assert again == first and other_task != first
    store.jobs.complete("w1", [outcome(claimed(store, first), VerdictKind.SUCCEEDED)], START)
    (after,) = store.jobs.enqueue([new(unique_key="k")], START)
    assert after != first, "a finished job frees its key"


def test_claim_takes_due_jobs_by_priority_then_run_at(store: Store) -> None:
    late, early, urgent, future = store.jobs.enqueue(
        [
            new(at=START - SECOND),
            new(at=START - 5 * SECOND),
            new(priority=-1),
            new(at=START + SECOND),
        ],
        START,
    )
    assert claim(store, limit=2) == [urgent, early]
    assert claim(store) == [late]
    assert claim(store) == []
    assert claim(store, now=START + SECOND) == [future]


def test_claim_only_takes_known_tasks_and_queues(store: Store) -> None:
    mine, other_task, other_queue = store.jobs.enqueue(
        [new("t"), new("unknown"), new("t", queue="mail")], START
    )
    assert claim(store) == [mine]
    assert claim(store, queues=("default", "mail")) == [other_queue]
    assert claim(store, tasks=("t", "unknown")) == [other_task]
    assert store.jobs.claim("w1", [], ["t"], 5, START, START + LEASE) == []
    assert store.jobs.claim("w1", ["default"], ["t"], 0, START, START + LEASE) == []


def test_claim_marks_running_with_a_lease_and_counts_the_attempt(store: Store) -> None:
    (job_id,) = store.jobs.enqueue([new()], START)
    (job,) = store.jobs.claim("w1", ["default"], ["t"], 5, START, START + LEASE)
    assert (job.id, job.state, job.attempt, job.lease_owner) == (job_id, JobState.RUNNING, 1, "w1")
    assert (job.started_at, job.lease_until) == (START, START + LEASE)
    assert store.reads.job(job_id) == job


def test_concurrent_claimers_never_receive_the_same_job(store: Store) -> None:
    ids = store.jobs.enqueue([new() for _ in range(60)], START)
    taken: dict[str, list[int]] = {"w1": [], "w2": [], "w3": []}
    start = threading.Barrier(len(taken))

    def take(worker: str) -> None:
        start.wait()
        while got := claim(store, worker, limit=4):
            taken[worker] += got

    threads = [threading.Thread(target=take, args=(worker,)) for worker in taken]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    every = [job_id for got in taken.values() for job_id in got]
    assert sorted(every) == ids, "each job claimed once, none left behind"


def test_paused_queues_are_skipped_by_claim_until_resumed(store: Store) -> None:
    mail, default = store.jobs.enqueue([new(queue="mail"), new()], START)
    assert store.cluster.set_queues_paused(["mail", "mail"], True, START) == ["mail"]
    assert store.cluster.set_queues_paused(["mail"], True, START) == [], "already paused"
    assert store.cluster.paused_queues() == {"mail"}
    assert claim(store, queues=("mail", "default")) == [default]
    assert claim(store, queues=("mail",)) == []
    assert store.cluster.set_queues_paused(["mail", "other"], False, START) == ["mail"]
    assert store.cluster.paused_queues() == set()
    assert claim(store, queues=("mail",)) == [mail]


def test_complete_applies_only_under_the_lease_holders_name(store: Store) -> None:
    (job_id,) = store.jobs.enqueue([new()], START)
    done = outcome(claimed(store, job_id), VerdictKind.SUCCEEDED)
    assert len(store.jobs.complete("zombie", [done], START)) == 0
    assert state(store, job_id) is JobState.RUNNING
    assert len(store.jobs.complete("w1", [done], START)) == 1
    finished = store.reads.job(job_id)
    assert finished is not None
    assert (finished.state, finished.lease_owner, finished.finished_at) == (
        JobState.SUCCEEDED,
        "w1",  # the worker that ran it; its lease is gone
        START,
    )
    assert finished.lease_until is None
    later = START + SECOND
    assert len(store.jobs.complete("w1", [done], later)) == 0, "a final state is never left"
    again = store.reads.job(job_id)
    assert again is not None and (again.state, again.finished_at) == (JobState.SUCCEEDED, START)


def test_complete_writes_a_failure_with_its_error(store: Store) -> None:
    (job_id,) = store.jobs.enqueue([new()], START)
    failed = outcome(claimed(store, job_id), VerdictKind.FAILED)
    assert len(store.jobs.complete("w1", [failed], START)) == 1
    job = store.reads.job(job_id)
    assert job is not None and job.state is JobState.FAILED
    assert [(error.attempt, error.message) for error in job.errors] == [(1, "boom")]


def test_heartbeat_renews_leases_and_reports_cancel_requests_and_lost_jobs(store: Store) -> None:
    keep, cancel_me, lost = store.jobs.enqueue([new(), new(), new("lost")], START)
    assert sorted(claim(store, tasks=("t", "lost"))) == [keep, cancel_me, lost]
    assert store.jobs.cancel(cancel_me, START) == Applied(requested=frozenset({cancel_me}))
    # ``lost`` is rescued by another process and claimed by another worker.
    late = START + LEASE + SECOND
    [expired] = [job for job in store.jobs.expired_leases(late, 10) if job.id == lost]
    assert (
        len(store.jobs.rescue([rescue(expired, late, RetryPolicy(), random.Random(0))], late)) == 1
    )
    assert claim(store, "w2", now=late, tasks=("lost",)) == [lost]
    cancel, gone = store.jobs.heartbeat("w1", [keep, cancel_me, lost], late, late + LEASE)
    assert (cancel, gone) == ({cancel_me}, {lost})
    renewed = store.reads.job(keep)
    assert renewed is not None and renewed.lease_until == late + LEASE
    assert store.jobs.heartbeat("w1", [], late, late + LEASE) == (set(), set())


def test_expired_leases_are_rescued_once_and_the_late_worker_changes_nothing(
    store: Store,
) -> None:
    (job_id,) = store.jobs.enqueue([new(max_attempts=3)], START)
    job = claimed(store, job_id)
    assert store.jobs.expired_leases(START + LEASE, 10) == []
    after = START + LEASE + SECOND
    (expired,) = store.jobs.expired_leases(after, 10)
    back = rescue(expired, after, RetryPolicy(), random.Random(0))
    assert len(store.jobs.rescue([back], after)) == 1
    assert len(store.jobs.rescue([back], after)) == 0
    rescued = store.reads.job(job_id)
    assert rescued is not None
    assert (rescued.state, rescued.attempt, rescued.lease_owner) == (JobState.PENDING, 1, None)
    assert rescued.errors[-1].code == "LEASE_EXPIRED"
    assert len(store.jobs.complete("w1", [outcome(job, VerdictKind.SUCCEEDED, after)], after)) == 0
    (again,) = store.jobs.claim("w2", ["default"], ["t"], 5, after, after + LEASE)
    assert again.attempt == 2


def test_a_late_outcome_of_an_earlier_claim_never_lands_on_the_same_workers_later_claim(
    store: Store,
) -> None:
    """A worker whose lease ran out while its handler still ran may claim the job again; the
    first run's outcome, reported late, is for an attempt the job is no longer at."""
    (job_id,) = store.jobs.enqueue([new(max_attempts=3)], START)
    first = claimed(store, job_id)
    after = START + LEASE + SECOND
    (expired,) = store.jobs.expired_leases(after, 10)
    assert (
        len(store.jobs.rescue([rescue(expired, after, RetryPolicy(), random.Random(0))], after))
        == 1
    )
    second = claimed(store, job_id, now=after)
    assert (second.attempt, second.lease_owner) == (2, "w1")
    for kind in (VerdictKind.RELEASED, VerdictKind.SUCCEEDED, VerdictKind.FAILED):
        assert len(store.jobs.complete("w1", [outcome(first, kind, after)], after)) == 0
    still = store.reads.job(job_id)
    assert still is not None and (still.state, still.attempt) == (JobState.RUNNING, 2)
    assert (
        len(store.jobs.complete("w1", [outcome(second, VerdictKind.SUCCEEDED, after)], after)) == 1
    )
    assert state(store, job_id) is JobState.SUCCEEDED


def test_cancel_answers_for_pending_paused_running_finished_and_missing(store: Store) -> None:
    pending, paused, running = store.jobs.enqueue([new(), new(), new(at=START - SECOND)], START)
    assert claim(store, limit=1) == [running]
    assert store.jobs.set_job_state(paused, JobState.PENDING, JobState.PAUSED) is True
    assert store.jobs.cancel(pending, START) == Applied(frozenset({pending}))
    assert store.jobs.cancel(paused, START) == Applied(frozenset({paused}))
    assert (state(store, pending), state(store, paused)) == (JobState.CANCELLED,) * 2
    assert store.jobs.cancel(running, START) == Applied(requested=frozenset({running}))
    still = store.reads.job(running)
    assert still is not None and still.state is JobState.RUNNING and still.cancel_requested
    assert store.jobs.cancel(pending, START) == Applied(), "finished already: nothing applied"
    assert store.jobs.cancel(10**9, START) is None
    assert store.jobs.cancel(2**70, START) is None, "past any BIGINT id"


def test_set_job_state_moves_only_from_the_source_state(store: Store) -> None:
    (job_id,) = store.jobs.enqueue([new()], START)
    assert store.jobs.set_job_state(job_id, JobState.PENDING, JobState.PAUSED) is True
    assert store.jobs.set_job_state(job_id, JobState.PENDING, JobState.PAUSED) is False
    assert claim(store) == [], "a paused job is never claimed"
    assert store.jobs.set_job_state(job_id, JobState.PAUSED, JobState.PENDING) is True
    assert store.jobs.set_job_state(10**9, JobState.PENDING, JobState.PAUSED) is None
    assert store.jobs.set_job_state(0, JobState.PENDING, JobState.PAUSED) is None
    assert claim(store) == [job_id]


def test_retry_brings_a_final_job_back_once(store: Store) -> None:
    (job_id,) = store.jobs.enqueue([new()], START)
    store.jobs.complete("w1", [outcome(claimed(store, job_id), VerdictKind.FAILED)], START)
    failed = store.reads.job(job_id)
    assert failed is not None
    (retried,) = store.finished.retry([job_id], START + SECOND)
    assert (retried.id, retried.attempt) == (job_id, 1), "as it was"
    assert store.finished.retry([job_id], START + SECOND) == [], "no longer failed"
    job = store.reads.job(job_id)
    assert job is not None
    assert (job.state, job.attempt, job.run_at, job.finished_at) == (
        JobState.PENDING,
        0,
        START + SECOND,
        None,
    )
    assert len(job.errors) == 1, "the history is kept"


def test_prune_deletes_finished_jobs_of_the_states_before_the_cutoff(store: Store) -> None:
    done, failed, old_done, waiting = store.jobs.enqueue(
        [new("done"), new("failed"), new("old"), new("waiting")], START
    )
    store.jobs.complete("w1", [outcome(claimed(store, old_done), VerdictKind.SUCCEEDED)], START)
    later = START + timedelta(hours=1)
    finished = outcome(claimed(store, done, now=later), VerdictKind.SUCCEEDED, later)
    store.jobs.complete("w1", [finished], later)
    store.jobs.complete("w1", [outcome(claimed(store, failed), VerdictKind.FAILED)], START)
    cutoff = START + SECOND
    assert store.finished.prune([JobState.SUCCEEDED], cutoff, 10) == Pruned(1, None)
    assert store.reads.job(old_done) is None
    both, until = [JobState.SUCCEEDED, JobState.FAILED], later + SECOND
    oldest = store.finished.prune(both, until, 1)
    assert oldest == Pruned(1, START), "the oldest, and where the next batch goes on"
    assert store.finished.prune(both, until, 10, after=later) == Pruned(0, None), "only after"
    assert store.finished.prune(both, until, 10, after=oldest.through) == Pruned(1, None)
    assert [job.id for job in store.reads.jobs(limit=None)] == [waiting], "pending jobs stay"


def test_jobs_lists_newest_first_with_filters(store: Store) -> None:
    a, b, c = store.jobs.enqueue([new(), new("u"), new(queue="mail")], START)
    claimed(store, a)
    assert [job.id for job in store.reads.jobs()] == [c, b, a]
    assert [job.id for job in store.reads.jobs(limit=2)] == [c, b]
    assert [job.id for job in store.reads.jobs(states=(JobState.RUNNING,))] == [a]
    assert [job.id for job in store.reads.jobs(task="u")] == [b]
    assert [job.id for job in store.reads.jobs(queue="mail")] == [c]
    assert store.reads.job(10**9) is None and store.reads.job(0) is None


def test_counts_per_state_queue_and_task(store: Store) -> None:
    store.jobs.enqueue([new(), new(), new(queue="mail"), new(at=START - SECOND)], START)
    claim(store, limit=1)
    counts = store.finished.counts(START)
    assert (counts.by_state["running"], counts.by_state["pending"], counts.total) == (1, 3, 4)
    assert counts.by_state[JobState.FAILED] == 0
    assert {queue: states["pending"] for queue, states in counts.by_queue.items()} == {
        "default": 2,
        "mail": 1,
    }
    assert counts.by_queue["default"]["running"] == 1
    assert {task: states["pending"] for task, states in counts.by_task.items()} == {"t": 3}


def test_counts_hold_every_live_job_and_the_jobs_finished_since_the_window(store: Store) -> None:
    early, late, _waiting = store.jobs.enqueue([new(), new(), new(at=START + 10 * SECOND)], START)
    store.jobs.complete("w1", [outcome(claimed(store, early), VerdictKind.SUCCEEDED)], START)
    later = START + SECOND
    store.jobs.complete("w1", [outcome(claimed(store, late), VerdictKind.FAILED, later)], later)
    counts = store.finished.counts(later)
    assert counts.finished_since == later
    assert (counts.by_state["succeeded"], counts.by_state["failed"]) == (0, 1)
    assert counts.by_state["pending"] == 1 and counts.total == 2
    assert store.finished.counts(START).by_state["succeeded"] == 1


def test_counts_stay_exact_as_finished_jobs_are_folded_retried_and_pruned(store: Store) -> None:
    day = timedelta(days=1)
    ids = store.jobs.enqueue([new(), new(), new(), new("u", queue="mail"), new()], START)
    finished = [START + n * day for n in range(4)]
    for job_id, at in zip(ids[:4], finished, strict=True):
        kind = VerdictKind.FAILED if job_id == ids[1] else VerdictKind.SUCCEEDED
        store.jobs.complete("w1", [outcome(claimed(store, job_id, now=at), kind, at)], at)

    def everything() -> tuple[int, int, int, int, int]:
        counts = store.finished.counts()
        assert counts.finished_since is None
        by_state = counts.by_state
        mail = counts.by_queue.get("mail", {}).get("succeeded", 0)
        return by_state["succeeded"], by_state["failed"], by_state["pending"], mail, counts.total

    assert everything() == (3, 1, 1, 1, 5)
    assert store.finished.fold(finished[2]) == 2, "the two jobs finished before the mark"
    assert store.finished.fold(finished[2]) == 0, "folding again adds nothing"
    assert everything() == (3, 1, 1, 1, 5)
    failed = store.reads.job(ids[1])
    assert failed is not None
    assert store.finished.retry([failed.id], finished[3]), "a folded job taken back"
    assert everything() == (3, 0, 2, 1, 5)
    assert store.finished.fold(finished[3] + day) == 2
    assert everything() == (3, 0, 2, 1, 5)
    assert store.finished.counts(finished[3]).by_state["succeeded"] == 1, (
        "a window counts only its own"
    )
    succeeded = [JobState.SUCCEEDED]
    assert sum(batch.jobs for batch in batches(store, succeeded, finished[2] + SECOND)) == 2
    assert everything() == (1, 0, 2, 1, 3)
    assert sum(batch.jobs for batch in batches(store, succeeded, finished[3] + SECOND)) == 1
    assert everything() == (0, 0, 2, 0, 2)
    assert store.finished.counts().by_task.get("u") is None, (
        "a task whose tallies are empty is gone"
    )


def test_a_pending_job_of_a_paused_queue_reads_paused(store: Store) -> None:
    mail, other = store.jobs.enqueue([new(queue="mail"), new()], START)
    store.cluster.set_queues_paused(["mail"], True, START)
    assert state(store, mail) is JobState.PAUSED and state(store, other) is JobState.PENDING
    counts = store.finished.counts()
    assert (counts.by_state["paused"], counts.by_state["pending"]) == (1, 1)
    assert counts.by_queue["mail"]["paused"] == 1
    store.cluster.set_queues_paused(["mail"], False, START)
    assert state(store, mail) is JobState.PENDING
    assert store.finished.counts().by_state["pending"] == 2


def test_waiting_queues_hold_pending_or_paused_jobs(store: Store) -> None:
    mail, _, running = store.jobs.enqueue(
        [new(queue="mail"), new(queue="bulk"), new(queue="x")], START
    )
    store.jobs.set_job_state(mail, JobState.PENDING, JobState.PAUSED)
    claimed(store, running)
    assert store.reads.waiting_queues() == {"mail", "bulk"}


def test_a_value_the_database_refuses_is_invalid_arguments(store: Store, db: Database) -> None:
    if db.backend == "sqlite":
        pytest.skip("SQLite keeps any integer of 64 bits in an INTEGER column")
    with pytest.raises(InvalidArguments, match="refused a value"):
        store.jobs.enqueue([new(), new(priority=2**40)], START)
    assert store.reads.jobs() == [], "all or none"
