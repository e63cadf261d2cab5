"""Clock skew: two instances 30 s apart still enqueue exactly one job per tick.

The instance ahead fires each tick 30 s early by the other's clock; the one behind must then
find the tick taken (the schedule's next run moved on, and the unique ``(schedule, tick)``
index), never fire it again, and never count it as missed.  Leases are not that tolerant (a
worker far ahead would take over live jobs), so with the system clock a process keeps its
clock on the database server's (``runtime.timeline``), and says when its host's is off.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import datetime, timedelta, timezone

import pytest

from rota import JobContext, Rota
from rota.core.clock import DatabaseClock, SystemClock
from rota.runtime.timeline import TimeLine
from rota.testing import FakeClock
from tests.conftest import START, Database
from tests.helpers import fire_in_lockstep, sql_store

SKEW = timedelta(seconds=30)
STEP = timedelta(seconds=10)
STEPS = 300


class Skewed:
    """A clock that reads ``offset`` ahead of another."""

    def __init__(self, clock: FakeClock, offset: timedelta) -> None:
        self.clock = clock
        self.offset = offset

    def now(self) -> datetime:
        return self.clock.now() + self.offset


@pytest.mark.slow
def test_skewed_instances_enqueue_one_job_per_tick(
    make_rota: Callable[..., Rota], clock: FakeClock, caplog: pytest.LogCaptureFixture
) -> None:
    instances = [make_rota(clock=clock), make_rota(clock=Skewed(clock, SKEW))]
    for instance in instances:

        @instance.task(name="every_minute", cron="* * * * *", overlap="allow")
        def every_minute(ctx: JobContext) -> None: ...

        instance._readiness.ensure_ready()
        instance._schedules.sync_code()
    with caplog.at_level(logging.INFO, logger="rota"):
        fire_in_lockstep(instances, clock, STEPS, STEP)

    ticks = [
        job.scheduled_at for job in instances[0].store.reads.jobs(task="every_minute", limit=999)
    ]
    last = START + STEPS * STEP + SKEW
    minutes = (last - START) // timedelta(minutes=1)
    expected = [START + n * timedelta(minutes=1) for n in range(minutes + 1)]
    assert sorted(tick for tick in ticks if tick is not None) == expected
    assert len(ticks) == len(expected)
    missed = [r for r in caplog.records if getattr(r, "event", "") == "schedule.missed"]
    assert missed == []


class Ahead(SystemClock):
    """This host's clock, but running ``SKEW`` ahead of the database server's."""

    def now(self) -> datetime:
        return super().now() + SKEW


def test_a_process_on_the_system_clock_reads_the_servers_and_warns_once_of_its_skew(
    server_db: Database, caplog: pytest.LogCaptureFixture
) -> None:
    rota = Rota(server_db.url, table_prefix=server_db.prefix, clock=Ahead())
    try:
        assert isinstance(rota.clock, DatabaseClock), "the system clock goes on the line"
        timeline = TimeLine(rota.store, rota.clock, rota.events)
        with caplog.at_level(logging.INFO, logger="rota"):
            skew = timeline.measure(readings=3)
            again = timeline.measure()
        in_step = TimeLine(rota.store, DatabaseClock(), rota.events).measure()
        fake = TimeLine(rota.store, FakeClock(START), rota.events).measure()
        line = rota.clock.now()
    finally:
        sql_store(rota).engine.dispose()
    assert abs(line - datetime.now(timezone.utc)) < timedelta(seconds=1), "the server's time"
    assert skew is not None and abs(skew - SKEW) < timedelta(seconds=1)
    assert again is not None and abs(again - SKEW) < timedelta(seconds=1)
    assert in_step is not None and abs(in_step) < timedelta(seconds=1)
    assert fake is None
    (warning,) = [r for r in caplog.records if getattr(r, "event", "") == "worker.clock_skew"]
    # The reading is off by up to half a round trip, so the skew is compared within a
    # tolerance and the message must show the measured value.
    measured = warning.__dict__["skew_seconds"]
    assert abs(measured - SKEW.total_seconds()) < 1
    assert abs(measured - skew.total_seconds()) < 1e-6
    assert warning.getMessage().split(";")[0] == (
        f"this host's clock is {measured:.1f} s ahead of the database server's"
    )


def test_a_fake_clock_is_used_as_it_is(db: Database) -> None:
    clock = FakeClock(START)
    rota = Rota(db.url, table_prefix=db.prefix, clock=clock)
    try:
        rota.jobs()  # connects, which measures the server's clock for a system clock
        assert rota.clock is clock and rota.clock.now() == START
    finally:
        sql_store(rota).engine.dispose()
