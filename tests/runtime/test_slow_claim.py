"""A claim whose commit stalls past the lease (a failover, a Galera eviction of a dead node):
the worker renews the leases it was handed before starting the jobs, and leaves out a job
another worker took over meanwhile, which would otherwise run twice at once.

The stall is a claim that returns only after the (fake) clock moved past the lease.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

import pytest
from sqlalchemy import update

from rota import JobContext, JobState, Rota
from rota.testing import FakeClock
from tests.conftest import Database
from tests.helpers import sql_store

LEASE = 30.0


def stalling(rota: Rota, clock: FakeClock, meanwhile: Callable[[int], None]) -> None:
    """Make ``rota``'s claims return after the lease ran out, ``meanwhile`` having been done
    to each job claimed."""
    claim = rota.store.jobs.claim

    def slow_claim(*arguments: Any) -> Any:
        jobs = claim(*arguments)
        if jobs:
            clock.advance(LEASE + 1)
        for job in jobs:
            meanwhile(job.id)
        return jobs

    rota.store.jobs.claim = slow_claim  # type: ignore[method-assign,assignment]


def test_a_claim_that_outlived_its_lease_renews_it_and_runs_the_job_once(
    make_rota: Callable[..., Rota], clock: FakeClock
) -> None:
    rota = make_rota(lease_seconds=LEASE)
    runs: list[int] = []

    @rota.task
    def record(ctx: JobContext) -> None:
        runs.append(ctx.job_id)
        assert ctx.job_id is not None
        job = rota.job(ctx.job_id)
        assert job.lease_until is not None and job.lease_until > clock.now(), "renewed"

    job_id = rota.queue(record)
    stalling(rota, clock, lambda job_id: None)
    assert rota.drain().succeeded == 1
    assert runs == [job_id]


def test_a_job_taken_over_during_a_slow_claim_is_left_to_the_worker_that_has_it(
    db: Database, make_rota: Callable[..., Rota], clock: FakeClock, caplog: pytest.LogCaptureFixture
) -> None:
    rota = make_rota(lease_seconds=LEASE)
    runs: list[int] = []

    @rota.task
    def record(ctx: JobContext) -> None:
        runs.append(ctx.job_id)

    job_id = rota.queue(record)
    jobs = sql_store(rota).schema.jobs
    engine = db.engine()

    def taken_over(claimed: int) -> None:  # rescued and claimed by another worker
        with engine.begin() as connection:
            connection.execute(
                update(jobs).where(jobs.c.id == claimed).values(lease_owner="elsewhere")
            )

    stalling(rota, clock, taken_over)
    with caplog.at_level(logging.WARNING, logger="rota.worker"):
        assert rota.drain().succeeded == 0
    engine.dispose()
    assert runs == []
    job = rota.job(job_id)
    assert (job.state, job.lease_owner) == (JobState.RUNNING, "elsewhere")
    assert "a slow claim's lease ran out" in caplog.text
