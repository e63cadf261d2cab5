"""Batches and ``after=`` on every backend (DESIGN.md, "Batches"): ``rota.batch`` queues the
jobs and both callbacks in one transaction; ``on_success`` runs once, after every job
succeeded, or is cancelled with ``DEPENDENCY_FAILED`` when one fails; ``on_complete`` runs once
every job is final, whatever its state; the callback's ``ctx.batch`` names the batch;
``batch_status`` counts the jobs by state and says when all have ended. ``queue(after=...)``
waits for jobs to end, whatever their end."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from datetime import timedelta
from typing import Any

import pytest

from rota import Enqueue, InvalidArguments, JobContext, JobNotFound, JobState, Rota
from rota.errors import ErrorCode
from rota.testing import FakeClock


def register(rota: Rota) -> tuple[Counter[str], list[Any]]:
    ran: Counter[str] = Counter()
    batches: list[Any] = []

    @rota.task(retries=0)
    def part(ctx: JobContext, n: int) -> int:
        ran["part"] += 1
        if n < 0:
            raise ValueError(f"part {n} fails")
        return n

    @rota.task
    def all_done(ctx: JobContext, label: str) -> None:
        ran[f"success {label}"] += 1
        batches.append(ctx.batch)

    @rota.task
    def finally_(ctx: JobContext, label: str) -> None:
        ran[f"complete {label}"] += 1
        batches.append(ctx.batch)

    return ran, batches


def test_a_batch_of_a_thousand_runs_both_callbacks_once(rota: Rota) -> None:
    ran, batches = register(rota)
    batch = rota.batch(
        [Enqueue("part", n) for n in range(1000)],
        on_success=Enqueue("all_done", "big"),
        on_complete=Enqueue("finally_", "big"),
    )
    assert len(batch.job_ids) == 1000 and len(set(batch.job_ids)) == 1000
    status = rota.batch_status(batch.id)
    assert (status.size, status.by_state, status.finished) == (1000, {"pending": 1000}, False)
    rota.drain()
    assert ran == {"part": 1000, "success big": 1, "complete big": 1}
    assert batches == [batch.id, batch.id]
    status = rota.batch_status(batch.id)
    assert (status.by_state, status.finished) == ({"succeeded": 1000}, True)
    assert all(rota.job(job_id).batch_id == batch.id for job_id in batch.job_ids[:3])


def test_a_failed_job_cancels_on_success_and_on_complete_still_runs(rota: Rota) -> None:
    ran, _ = register(rota)
    batch = rota.batch(
        [Enqueue("part", 1), Enqueue("part", -2), Enqueue("part", 3)],
        on_success=Enqueue("all_done", "x"),
        on_complete=Enqueue("finally_", "x"),
    )
    rota.drain()
    assert ran == {"part": 3, "complete x": 1}
    status = rota.batch_status(batch.id)
    assert (status.by_state, status.finished) == ({"succeeded": 2, "failed": 1}, True)
    cancelled = [
        job
        for job in rota.inspect.jobs([JobState.CANCELLED], task="all_done")
        if job.batch_id == batch.id
    ]
    assert [job.errors[-1].code for job in cancelled] == [ErrorCode.DEPENDENCY_FAILED]


def test_a_batch_is_written_whole_or_not_at_all(rota: Rota) -> None:
    register(rota)
    with pytest.raises(InvalidArguments):
        rota.batch([Enqueue("part", 1), Enqueue("part", "too", "many")])
    with pytest.raises(InvalidArguments, match="no depends_on or after"):
        rota.batch([Enqueue("part", 1)], on_success=Enqueue("all_done", "y", depends_on=[1]))
    with pytest.raises(InvalidArguments, match="at least one job"):
        rota.batch([])
    with pytest.raises(InvalidArguments, match="no unique_key"):
        rota.batch([Enqueue("part", 1, unique_key="k")])
    with pytest.raises(InvalidArguments, match="Enqueue requests"):
        rota.batch(["part"])  # type: ignore[list-item]
    assert rota.counts().by_state.get("pending", 0) == 0
    with pytest.raises(JobNotFound, match="batch 4242"):
        rota.batch_status(4242)


def test_after_waits_for_every_job_to_end_whatever_its_end(rota: Rota) -> None:
    ran, _ = register(rota)
    failing = rota.queue("part", -1)
    fine = rota.queue("part", 1)
    later = rota.queue("finally_", "after", after=[failing, fine])
    dependent = rota.queue("all_done", "dep", depends_on=[failing])
    assert rota.job(later).state is JobState.PENDING
    rota.drain()
    assert rota.job(later).state is JobState.SUCCEEDED
    assert rota.job(dependent).state is JobState.CANCELLED
    assert ran == {"part": 2, "complete after": 1}
    with pytest.raises(InvalidArguments, match="after"):
        rota.queue("finally_", "z", after=[10**12])
    with pytest.raises(InvalidArguments, match="after holds job ids"):
        rota.queue("finally_", "z", after=["x"])


def test_a_batch_row_goes_once_its_jobs_were_pruned(
    make_rota: Callable[..., Rota], clock: FakeClock
) -> None:
    rota = make_rota(succeeded_retention=timedelta(days=1), failed_retention=timedelta(days=2))
    register(rota)
    batch = rota.batch([Enqueue("part", 1)], on_complete=Enqueue("finally_", "p"))
    rota.drain()
    clock.advance(timedelta(days=1, seconds=1))
    assert rota.prune() == 2
    status = rota.batch_status(batch.id)
    assert (status.by_state, status.finished) == ({}, True), "kept until its retention"
    clock.advance(timedelta(days=1))
    rota.prune()
    with pytest.raises(JobNotFound, match=f"batch {batch.id}"):
        rota.batch_status(batch.id)
