"""Bulk actions, ``update_job``, ``replay`` and unique keys over time on every backend
(DESIGN.md, "Tags, search and bulk actions"): an action reaches every job its filter matches,
in batches, only from the state it acts from; it is announced per job and recorded once;
``update_job`` is a compare-and-set; ``debounce`` folds a burst into one run and
``unique_for`` keeps a key taken after its job finished, also under concurrent callers."""

from __future__ import annotations

import threading
from datetime import timedelta
from typing import Any

import pytest

from rota import Fail, Filter, InvalidArguments, JobContext, JobNotFound, JobState, Rota
from rota.testing import FakeClock


def register(rota: Rota, ran: list[Any]) -> None:
    @rota.task(retries=0)
    def work(ctx: JobContext, n: int) -> None:
        ran.append(n)
        if n < 0:
            raise Fail("negative")


def test_each_bulk_action_reaches_every_matching_job_across_batches(
    rota: Rota, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("rota.runtime.services.bulk.BULK_BATCH", 7)
    ran: list[Any] = []
    register(rota, ran)
    heard: list[str] = []
    rota.on("*", lambda event: heard.append(str(event.name)))
    failing = [rota.queue("work", -n - 1, tags=["bad"]) for n in range(20)]
    other = [rota.queue("work", n) for n in range(5)]
    with rota.acting_as("admin:ana"):
        assert rota.pause(matching=Filter(tags=["bad"])) == 20
    assert rota.count(state="paused") == 20
    rota.drain()
    assert sorted(ran) == list(range(5)), "paused jobs did not run"
    assert rota.resume(matching=Filter(tags=["bad"])) == 20
    rota.drain()
    assert rota.count(state="failed") == 20
    assert rota.retry(matching=Filter(state="failed")) == 20
    assert rota.retry(matching=Filter(state="failed")) == 0, "nothing failed any more"
    assert rota.cancel(matching=Filter(tags=["bad"])) == 20
    assert rota.delete(matching=Filter(state="cancelled")) == 20
    assert rota.count() == len(other)
    for job_id in failing:
        with pytest.raises(JobNotFound):
            rota.job(job_id)
    actions = rota.store.search.bulk_actions(10)
    assert [(a.action, a.jobs) for a in actions] == [
        ("delete", 20),
        ("cancel", 20),
        ("retry", 0),
        ("retry", 20),
        ("resume", 20),
        ("pause", 20),
    ]
    assert actions[-1].actor == "admin:ana" and actions[-1].filter == {"tags": ["bad"]}
    assert heard.count("job.paused") == 20 and heard.count("job.deleted") == 20
    assert heard.count("job.retried") == 20 and heard.count("jobs.bulk") == 6


def test_a_bulk_cancel_asks_a_running_job_to_stop_and_never_deletes_it(rota: Rota) -> None:
    ran: list[Any] = []
    register(rota, ran)
    job_id = rota.queue("work", 1, tags=["x"])
    claimed = rota.store.jobs.claim(
        "w1", ["default"], ["work"], 1, rota.clock.now(), rota.clock.now()
    )
    assert [job.id for job in claimed] == [job_id]
    assert rota.delete(matching=Filter(tags=["x"])) == 0
    assert rota.cancel(matching=Filter(tags=["x"])) == 1
    job = rota.job(job_id)
    assert (job.state, job.cancel_requested) == (JobState.RUNNING, True)


def test_a_bulk_action_needs_a_filter(rota: Rota) -> None:
    with pytest.raises(InvalidArguments, match="matching=Filter"):
        rota.retry(matching=None)  # type: ignore[call-overload]
    with pytest.raises(InvalidArguments, match="takes a Filter"):
        rota.cancel(matching={"state": "failed"})  # type: ignore[call-overload]
    with pytest.raises(InvalidArguments, match="not both"):
        rota.delete(1, matching=Filter())  # type: ignore[call-overload]


def test_update_job_is_a_compare_and_set_on_an_unclaimed_job(rota: Rota, clock: FakeClock) -> None:
    ran: list[Any] = []
    register(rota, ran)
    job_id = rota.queue("work", 1, delay=3600, tags=["a"])
    later = clock.now()
    assert rota.update_job(
        job_id, run_at=later, priority=-5, queue="fast", tags=["b"], meta={"why": "rush"}
    )
    job = rota.job(job_id)
    assert (job.run_at, job.priority, job.queue, job.tags, job.meta) == (
        later,
        -5,
        "fast",
        ("b",),
        {"why": "rush"},
    )
    assert rota.count(tags=["a"]) == 0 and rota.count(tags=["b"]) == 1
    rota.update_job(job_id, queue="default")
    rota.drain()
    assert rota.update_job(job_id, priority=1) is False, "finished: refused"
    with pytest.raises(JobNotFound):
        rota.update_job(10**12, priority=1)
    with pytest.raises(InvalidArguments, match="changes run_at"):
        rota.update_job(job_id)
    with pytest.raises(InvalidArguments, match="priority"):
        rota.update_job(job_id, priority=5000)


def test_replay_queues_a_linked_copy_of_a_finished_job(rota: Rota) -> None:
    ran: list[Any] = []
    register(rota, ran)
    job_id = rota.queue("work", 7, tags=["t"], meta={"m": 1})
    with pytest.raises(InvalidArguments, match="only a finished job"):
        rota.replay(job_id)
    rota.drain()
    copy = rota.replay(job_id)
    job = rota.job(copy)
    assert (job.replay_of, job.args, job.tags, job.meta, job.state) == (
        job_id,
        (7,),
        ("t",),
        {"m": 1},
        JobState.PENDING,
    )
    rota.drain()
    assert ran == [7, 7]
    with pytest.raises(JobNotFound):
        rota.replay(10**12)


def test_debounce_folds_a_burst_into_one_run_with_the_last_arguments(
    rota: Rota, clock: FakeClock
) -> None:
    ran: list[Any] = []
    register(rota, ran)
    first = rota.queue("work", 1, unique_key="k", debounce=timedelta(seconds=30))
    for n in range(2, 6):
        clock.advance(10)
        assert rota.queue("work", n, unique_key="k", debounce=30) == first
    job = rota.job(first)
    assert (job.args, job.run_at) == ((5,), clock.now() + timedelta(seconds=30))
    clock.advance(29)
    rota.drain()
    assert ran == [], "not due: each call moved it"
    clock.advance(1)
    rota.drain()
    assert ran == [5]


def test_unique_for_keeps_the_key_taken_after_the_job_finished(
    rota: Rota, clock: FakeClock
) -> None:
    ran: list[Any] = []
    register(rota, ran)
    first = rota.queue("work", 1, unique_key="once", unique_for=3600)
    rota.drain()
    clock.advance(3599)
    assert rota.queue("work", 2, unique_key="once", unique_for=3600) == first
    clock.advance(1)
    second = rota.queue("work", 3, unique_key="once", unique_for=3600)
    assert second != first
    rota.drain()
    assert ran == [1, 3]
    plain = rota.queue("work", 4, unique_key="plain")
    rota.drain()
    assert rota.queue("work", 5, unique_key="plain") != plain, "no period: free at once"


def concurrently(callers: list[Rota], queue: Any) -> list[int]:
    """``queue(rota, n)`` from a thread per caller at once; every id it returned, in the order
    they came (an exception in any thread fails the test)."""
    ids: list[int] = []
    errors: list[BaseException] = []

    def call(rota: Rota, n: int) -> None:
        try:
            ids.extend(queue(rota, n))
        except BaseException as error:
            errors.append(error)

    threads = [threading.Thread(target=call, args=(r, n)) for n, r in enumerate(callers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    return ids


def test_concurrent_debounced_callers_make_one_job(make_rota: Any, clock: FakeClock) -> None:
    callers = [make_rota() for _ in range(4)]
    for each in callers:
        register(each, [])

    def burst(rota: Rota, n: int) -> list[int]:
        return [rota.queue("work", n * 10 + k, unique_key="burst", debounce=60) for k in range(5)]

    ids = concurrently(callers, burst)
    assert len(set(ids)) == 1 and len(ids) == 20
    assert callers[0].count() == 1


def test_concurrent_callers_after_a_unique_for_period_make_one_new_job(
    make_rota: Any, clock: FakeClock
) -> None:
    callers = [make_rota() for _ in range(4)]
    for each in callers:
        register(each, [])
    first = callers[0].queue("work", 0, unique_key="daily", unique_for=60)
    callers[0].drain()
    clock.advance(61)
    ids = concurrently(
        callers, lambda rota, n: [rota.queue("work", n, unique_key="daily", unique_for=60)]
    )
    assert len(set(ids)) == 1 and first not in ids, "one new job, the finished one freed"
    assert callers[0].count(state="pending") == 1


def test_a_pruned_or_deleted_job_takes_its_tags_along(rota: Rota, clock: FakeClock) -> None:
    register(rota, [])
    rota.queue("work", 1, tags=["gone"])
    rota.drain()
    clock.advance(rota.config.succeeded_retention + timedelta(days=1))
    kept = rota.queue("work", 2, tags=["gone"])
    assert rota.count(tags=["gone"]) == 2
    assert rota.prune() == 1
    assert rota.count(tags=["gone"]) == 1, "counted from the tags alone"
    assert rota.delete(kept)
    assert rota.count(tags=["gone"]) == 0
    assert rota.find(tags=["gone"]).jobs == []


def test_a_deleted_dependency_counts_as_satisfied(rota: Rota) -> None:
    ran: list[Any] = []
    register(rota, ran)
    parent = rota.queue("work", 1, delay=3600)
    child = rota.queue("work", 2, depends_on=[parent])
    assert rota.delete(parent)
    assert rota.drain().succeeded == 1
    assert ran == [2] and rota.job(child).state is JobState.SUCCEEDED
