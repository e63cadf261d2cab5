"""The prune's passes: only the lease holder prunes; a pass deletes a backlog of any size, a
batch at a time with a pause after each, until none is left or half its lease is spent; the
next pass renews the lease, and a holder whose lease ran out stops.

Each batch is made to take a second of a clock that the pass's pauses move on at once, so a
pass's minutes go by without sleeping.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any, TypeVar

import pytest
from sqlalchemy import update

from rota import Enqueue, JobContext, Rota
from rota.runtime.retention import PrunePass, Retention, lease_pass
from rota.runtime.timer import Timer
from rota.testing import FakeClock
from tests.helpers import sql_store

T = TypeVar("T")
BATCH_SECONDS = 1.0
PAST_RETENTION = timedelta(days=9)
"""Past the succeeded jobs' retention, seven days, for jobs finished over the next day."""


class SteppedClock(FakeClock):
    """A clock that a wait moves on at once."""

    async def sleep(self, seconds: float) -> None:
        self.advance(seconds)


def old_jobs(rota: Rota, clock: FakeClock, count: int) -> None:
    """``count`` jobs succeeded a second apart (a batch also takes those that finished at the
    same instant as its last), then the clock moved past their retention."""

    @rota.task(retries=0)
    def done(ctx: JobContext) -> None: ...

    ids = rota.queue_many([Enqueue(done) for _ in range(count)])
    assert rota.drain().succeeded == count
    jobs = sql_store(rota).schema.jobs
    with sql_store(rota).engine.begin() as connection:
        for n, job_id in enumerate(ids):
            at = clock.now() + timedelta(seconds=n)
            connection.execute(update(jobs).where(jobs.c.id == job_id).values(finished_at=at))
    clock.advance(PAST_RETENTION)


def paced(pruning: PrunePass, clock: SteppedClock, until: datetime) -> bool:
    """Run ``pruning`` as a worker does, each batch taking ``BATCH_SECONDS`` of ``clock``."""

    async def db(call: Callable[..., T], *args: Any) -> T:
        result = call(*args)
        clock.advance(BATCH_SECONDS)
        return result

    return asyncio.run(pruning.paced(db, clock, Timer(clock), until))


def remaining(rota: Rota) -> int:
    return len(rota.store.reads.jobs(limit=None))


@pytest.fixture
def stepped() -> SteppedClock:
    return SteppedClock()


def test_only_the_lease_holder_prunes(rota: Rota, clock: FakeClock) -> None:
    rota.jobs()
    retention, lease = Retention(), timedelta(seconds=60)

    def pruned(owner: str) -> int | None:
        pruning = lease_pass(rota.store, owner, retention, clock.now(), lease)
        return None if pruning is None else pruning.run()

    assert pruned("a") == 0
    assert pruned("b") is None
    assert pruned("a") == 0
    clock.advance(61)
    assert pruned("b") == 0
    assert pruned("a") is None


def test_a_pass_deletes_a_backlog_of_many_batches_within_its_lease(
    make_rota: Callable[..., Rota], clock: FakeClock, stepped: SteppedClock
) -> None:
    """A pass once stopped after 200 batches, and the next came a minute later: 201 batches
    of one job, a second each, go in one pass."""
    rota = make_rota()
    old_jobs(rota, clock, 201)
    stepped.set(clock.now())
    lease = timedelta(minutes=20)
    pruning = lease_pass(rota.store, "me", Retention(batch=1), stepped.now(), lease)
    assert pruning is not None
    start = stepped.now()
    assert paced(pruning, stepped, start + lease / 2), "done: nothing is past retention"
    assert (pruning.jobs, remaining(rota)) == (201, 0)
    assert stepped.now() - start < lease / 2


@pytest.mark.parametrize(
    "retention",
    [Retention(batch=1, pause=1.0, pace=0.1), Retention(batch=1, pause=3.0, pace=0.5)],
    ids=["paused-as-long-as-the-batch", "pause-cut-short-to-keep-pace"],
)
def test_a_pass_ends_half_way_through_its_lease_and_the_next_renews_it(
    make_rota: Callable[..., Rota], clock: FakeClock, stepped: SteppedClock, retention: Retention
) -> None:
    rota = make_rota()
    old_jobs(rota, clock, 20)
    stepped.set(clock.now())
    lease = timedelta(seconds=20)
    pruning = lease_pass(rota.store, "me", retention, stepped.now(), lease)
    assert pruning is not None
    assert not paced(pruning, stepped, stepped.now() + lease / 2), "a backlog is left"
    assert pruning.jobs == 5, "a second a batch, a second's pause: 5 in 10 s"
    assert lease_pass(rota.store, "other", retention, stepped.now(), lease) is None
    pruning = lease_pass(rota.store, "me", retention, stepped.now(), lease)
    assert pruning is not None, "renewed by its holder"
    stepped.advance(lease - timedelta(seconds=1))
    assert lease_pass(rota.store, "other", retention, stepped.now(), lease) is None, "renewed"
    assert pruning.run() == 15
    assert remaining(rota) == 0


def test_a_holder_whose_lease_ran_out_stops(
    make_rota: Callable[..., Rota], clock: FakeClock, stepped: SteppedClock
) -> None:
    """A batch that stalled past the whole lease ends the pass; another worker takes the
    lease meanwhile, and the stalled one's next pass finds it held."""
    rota = make_rota()
    old_jobs(rota, clock, 4)
    stepped.set(clock.now())
    retention, lease = Retention(batch=1), timedelta(seconds=BATCH_SECONDS / 2)
    pruning = lease_pass(rota.store, "me", retention, stepped.now(), lease)
    assert pruning is not None
    assert not paced(pruning, stepped, stepped.now() + lease / 2)
    assert pruning.jobs == 1, "one batch, then the pass is past its end"
    assert lease_pass(rota.store, "other", retention, stepped.now(), lease) is not None
    assert lease_pass(rota.store, "me", retention, stepped.now(), lease) is None
    assert remaining(rota) == 3
