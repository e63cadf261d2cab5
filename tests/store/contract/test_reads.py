"""What listings and charts read without the jobs' arguments: summaries, the newest job of
each schedule, and the jobs finished per period."""

from __future__ import annotations

import dataclasses
import random
from datetime import timedelta

from rota.core.backoff import RetryPolicy
from rota.core.model import AttemptError, JobState, NewJob, Progress, ProgressReport
from rota.core.transitions import Verdict, VerdictKind, after_attempt
from rota.store import Store
from tests.conftest import START
from tests.store.contract.support import claimed, new, outcome

HOUR = timedelta(hours=1)
MICROSECOND = timedelta(microseconds=1)
BIG = '{"v":1,"args":["' + "x" * 100_000 + '"],"kwargs":{}}'


def test_summaries_are_the_jobs_without_arguments_newest_first(store: Store) -> None:
    a, b, c, d = store.jobs.enqueue(
        [dataclasses.replace(new(), payload=BIG), new("u"), new(queue="mail"), new()], START
    )
    failed = claimed(store, a)
    store.jobs.complete("w1", [outcome(failed, VerdictKind.FAILED)], START)
    claimed(store, d)
    assert [s.id for s in store.reads.summaries()] == [d, c, b, a]
    assert [s.id for s in store.reads.summaries(limit=2, offset=1)] == [c, b]
    assert [s.id for s in store.reads.summaries(limit=None, offset=3)] == [a]
    assert [s.id for s in store.reads.summaries(states=(JobState.FAILED,))] == [a]
    assert [s.id for s in store.reads.summaries(task="u")] == [b]
    assert [s.id for s in store.reads.summaries(queue="mail")] == [c]
    assert [s.id for s in store.reads.summaries(job_id=b)] == [b]
    assert store.reads.summaries(job_id=10**9) == []
    for summary in store.reads.summaries():
        job = store.reads.job(summary.id)
        assert job is not None
        common = {f.name for f in dataclasses.fields(summary)} - {"last_error", "failures"}
        assert {n: getattr(summary, n) for n in common} == {n: getattr(job, n) for n in common}
        assert summary.last_error == (job.errors[-1] if job.errors else None)
        assert summary.failures == len(job.errors)
    (summary,) = store.reads.summaries(job_id=a)
    assert summary.last_error is not None and summary.last_error.message == "boom"
    (running,) = store.reads.summaries(states=(JobState.RUNNING,))
    assert (running.id, running.lease_owner) == (d, "w1")


def test_live_lists_the_lines_of_rota_jobs_newest_first(store: Store) -> None:
    done, retried, held, running = store.jobs.enqueue(
        [new(), new(max_attempts=3), new(queue="mail"), new(task="u")], START
    )
    store.jobs.complete("w1", [outcome(claimed(store, done), VerdictKind.SUCCEEDED)], START)
    first = claimed(store, retried)
    error = AttemptError(1, START, "EXECUTION_FAILED", "ValueError", "boom")
    retry = after_attempt(
        first, Verdict(VerdictKind.FAILED, error=error), START, RetryPolicy(), random.Random(0)
    )
    store.jobs.complete("w1", [retry], START)
    store.cluster.set_queues_paused(["mail"], True, START)
    job = claimed(store, running)
    report = ProgressReport(running, job.attempt, Progress(0.5, "half"))
    store.jobs.heartbeat("w1", [running], START, START + HOUR, [report])
    lines = store.reads.live()
    assert [(line.id, line.name, line.status) for line in lines] == [
        (running, "u", "running"),
        (held, "t", "paused"),
        (retried, "t", "pending"),
    ]
    by_id = {line.id: line for line in lines}
    assert (by_id[running].progress, by_id[running].next_run) == (Progress(0.5, "half"), None)
    assert by_id[running].last_run == START and by_id[running].runs == 1
    again = store.reads.job(retried)
    assert again is not None and again.state is JobState.PENDING
    assert (by_id[retried].failures, by_id[retried].runs) == (1, 1)
    assert by_id[retried].next_run == again.run_at and by_id[retried].progress is None
    assert [line.id for line in store.reads.live(limit=2)] == [running, held]
    store.cluster.set_queues_paused(["mail"], False, START)
    assert [line.status for line in store.reads.live()][1] == "pending"


def test_last_scheduled_is_the_newest_job_of_each_schedule(store: Store) -> None:
    def tick(name: str, n: int) -> NewJob:
        return new(schedule=name, scheduled_at=START + n * HOUR)

    old_a, b, new_a = store.jobs.enqueue([tick("a", 2), tick("b", 1), tick("a", 1)], START)
    store.jobs.enqueue([new()], START)
    last = store.reads.last_scheduled()
    assert sorted(last) == ["a", "b"]
    assert (last["a"].id, last["b"].id) == (new_a, b), "the newest by id, not by tick"
    assert last["a"].schedule == "a" and last["a"].state is JobState.PENDING
    assert old_a < new_a


def test_finished_per_period_counts_final_states_in_half_open_periods(store: Store) -> None:
    bounds = [START, START + HOUR, START + 2 * HOUR, START + 3 * HOUR]
    assert store.reads.finished_per_period(bounds) == {
        "succeeded": [0, 0, 0],
        "failed": [0, 0, 0],
        "cancelled": [0, 0, 0],
    }
    moments = [
        START - MICROSECOND,  # before the first period
        START,  # the first instant of the first
        START + HOUR - MICROSECOND,  # its last instant
        START + HOUR,  # the second's first
        START + 3 * HOUR - MICROSECOND,  # the third's last
        START + 3 * HOUR,  # after the last period
    ]
    ids = store.jobs.enqueue([new(at=START - 2 * HOUR) for _ in range(len(moments) + 4)], START)
    for job_id, at in zip(ids[: len(moments)], moments, strict=True):
        job = claimed(store, job_id, now=at - HOUR)
        store.jobs.complete("w1", [outcome(job, VerdictKind.SUCCEEDED, at)], at)
    failed = claimed(store, ids[6], now=START)
    store.jobs.complete("w1", [outcome(failed, VerdictKind.FAILED, START + HOUR)], START + HOUR)
    store.jobs.cancel(ids[7], START + 2 * HOUR)
    claimed(store, ids[8], now=START + HOUR)  # running: not finished
    assert store.reads.finished_per_period(bounds) == {
        "succeeded": [2, 1, 1],
        "failed": [0, 1, 0],
        "cancelled": [0, 0, 1],
    }
    assert store.reads.finished_per_period(bounds[1:3]) == {
        "succeeded": [1],
        "failed": [1],
        "cancelled": [0],
    }
    assert store.reads.finished_per_period([START]) == {
        "succeeded": [],
        "failed": [],
        "cancelled": [],
    }


def test_job_state_is_the_state_job_shows(store: Store) -> None:
    mail, held, paused, done, failed = store.jobs.enqueue(
        [new(queue="mail"), new(), new(), new(), dataclasses.replace(new(), payload=BIG)], START
    )
    store.cluster.set_queues_paused(["mail"], True, START)
    store.jobs.set_job_state(paused, JobState.PENDING, JobState.PAUSED)
    claimed(store, held)
    store.jobs.complete("w1", [outcome(claimed(store, done), VerdictKind.SUCCEEDED)], START)
    store.jobs.complete("w1", [outcome(claimed(store, failed), VerdictKind.FAILED)], START)
    for job_id in (mail, held, paused, done, failed):
        job = store.reads.job(job_id)
        assert job is not None and store.reads.job_state(job_id) is job.state
    assert [store.reads.job_state(job_id) for job_id in (mail, held, paused, done, failed)] == [
        JobState.PAUSED,
        JobState.RUNNING,
        JobState.PAUSED,
        JobState.SUCCEEDED,
        JobState.FAILED,
    ]
    store.cluster.set_queues_paused(["mail"], False, START)
    assert store.reads.job_state(mail) is JobState.PENDING
    for missing in (10**9, 0, -1, 2**63):
        assert store.reads.job_state(missing) is None
