"""Counts over a window and jobs per period, read from the hour tallies and the index beside
them, equal what grouping every job's row gives, wherever the fold's mark stands: before the
jobs, inside an hour, on a whole hour, past them all; and after retries and prunes of folded
jobs, a prune's batch taking its jobs off the tallies of their own hour."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta
from itertools import pairwise

from rota.core.model import Counts, Job, JobState
from rota.core.transitions import VerdictKind
from rota.store import Store
from tests.conftest import START
from tests.store.contract.support import batches, claimed, new, outcome

HOUR, MINUTE = timedelta(hours=1), timedelta(minutes=1)
FINAL = [state for state in JobState if state.is_final]
SINCE = [START - HOUR, START + 10 * MINUTE, START + HOUR, START + 160 * MINUTE, START + 5 * HOUR]
BOUNDS = [
    [START - HOUR + n * HOUR for n in range(9)],
    [START + 5 * MINUTE, START + HOUR, START + 181 * MINUTE, START + 7 * HOUR],
]


def finish_over_six_hours(store: Store) -> list[int]:
    """16 jobs over two tasks and two queues, one every 23 minutes from ``START`` (a whole
    hour), every third one failed, and one left pending."""
    shapes = [
        new("t" if n % 2 else "u", queue="mail" if n % 4 < 2 else "default") for n in range(17)
    ]
    ids = store.jobs.enqueue(
        [new(job.task, START - HOUR + n * MINUTE, queue=job.queue) for n, job in enumerate(shapes)],
        START,
    )
    for n, job_id in enumerate(ids[:16]):
        at = START + n * 23 * MINUTE + n * timedelta(microseconds=1)
        kind = VerdictKind.FAILED if n % 3 == 0 else VerdictKind.SUCCEEDED
        store.jobs.complete("w1", [outcome(claimed(store, job_id, now=at), kind, at)], at)
    return ids


def grouped(jobs: Sequence[Job], since: datetime) -> Counts:
    """What a GROUP BY of the rows gives: every live job and those finished since ``since``."""
    rows = [
        (job.state.value, job.queue, job.task, 1)
        for job in jobs
        if job.finished_at is None or job.finished_at >= since
    ]
    return Counts.from_rows(rows, since)


def per_period(jobs: Sequence[Job], bounds: Sequence[datetime]) -> dict[str, list[int]]:
    return {
        state.value: [
            sum(
                job.state is state and start <= job.finished_at < end
                for job in jobs
                if job.finished_at
            )
            for start, end in pairwise(bounds)
        ]
        for state in FINAL
    }


def assert_windows_exact(store: Store) -> None:
    jobs = store.reads.jobs(limit=None)
    counts, expected = store.finished.counts(), grouped(jobs, START - 2 * HOUR)
    assert (counts.by_state, counts.by_queue, counts.by_task) == (
        expected.by_state,
        expected.by_queue,
        expected.by_task,
    ), "all time"
    for since in SINCE:
        counts, expected = store.finished.counts(since), grouped(jobs, since)
        assert (counts.by_state, counts.by_queue, counts.by_task) == (
            expected.by_state,
            expected.by_queue,
            expected.by_task,
        ), since
    for bounds in BOUNDS:
        assert store.reads.finished_per_period(bounds) == per_period(jobs, bounds), bounds


def test_windows_equal_the_rows_grouped_wherever_the_mark_stands(store: Store) -> None:
    ids = finish_over_six_hours(store)
    assert_windows_exact(store)
    assert store.finished.fold(START + 150 * MINUTE) == 7, "up to inside the third hour"
    assert_windows_exact(store)
    failed = store.reads.job(ids[3])
    assert failed is not None and failed.state is JobState.FAILED
    assert store.finished.retry([failed.id], START + 7 * HOUR), "a folded job back"
    assert_windows_exact(store)
    succeeded = batches(store, [JobState.SUCCEEDED], START + 90 * MINUTE)
    assert sum(batch.jobs for batch in succeeded) == 2
    assert_windows_exact(store)
    assert store.finished.fold(START + 4 * HOUR) == 4, "up to a whole hour"
    assert_windows_exact(store)
    assert store.finished.fold(START + 8 * HOUR) == 5, "every finished job"
    assert_windows_exact(store)
    assert sum(batch.jobs for batch in batches(store, FINAL, START + 8 * HOUR)) == 13
    assert_windows_exact(store)


def test_windows_stay_exact_through_a_prune_of_several_hours_across_the_mark(
    store: Store,
) -> None:
    finish_over_six_hours(store)
    assert store.finished.fold(START + 150 * MINUTE) == 7, "up to inside the third hour"
    sizes: list[int] = []
    for batch in batches(store, FINAL, START + 5 * HOUR, limit=2):
        sizes.append(batch.jobs)
        assert_windows_exact(store)
    assert sizes == [2, 1, 2, 1, 2, 2, 1, 2, 1], "two at most, and none across an hour"
    assert store.finished.fold(START + 8 * HOUR) == 2, "the two jobs left"
    assert_windows_exact(store)
