"""Clock skew: two instances 30 s apart still enqueue exactly one job per tick.

The instance ahead fires each tick 30 s early by the other's clock; the one behind must then
find the tick taken (the schedule's next run moved on, and the unique ``(schedule, tick)``
index), never fire it again, and never count it as missed.  Leases are not that tolerant (a
worker far ahead would take over live jobs), so a worker compares its clock with the
database server's at start and warns.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import datetime, timedelta, timezone

import pytest

from rota import JobContext, Rota
from rota.core.clock import SystemClock, offset
from rota.runtime.connect import check_clock
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

        @instance.task(name="every_minute", cron="* * * * *")
        def every_minute(ctx: JobContext) -> None: ...

        instance._life.ensure_ready()
        instance._schedules.sync_code()
    with caplog.at_level(logging.INFO, logger="rota"):
        fire_in_lockstep(instances, clock, STEPS, STEP)

    ticks = [job.scheduled_at for job in instances[0].store.jobs(task="every_minute", limit=999)]
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


def test_server_time_is_read_from_the_database(db: Database) -> None:
    rota = Rota(db.url, table_prefix=db.prefix)
    try:
        before = datetime.now(timezone.utc)
        server = rota.store.server_time()
        after = datetime.now(timezone.utc)
    finally:
        sql_store(rota).engine.dispose()
    if db.backend == "sqlite":
        assert server is None
        return
    assert server is not None
    # The servers run on this host: the same clock, read within one round trip.
    assert before - timedelta(seconds=1) <= server <= after + timedelta(seconds=1)


def test_a_worker_warns_when_its_clock_is_off_by_seconds(
    server_db: Database, caplog: pytest.LogCaptureFixture
) -> None:
    rota = Rota(server_db.url, table_prefix=server_db.prefix)
    try:
        with caplog.at_level(logging.WARNING, logger="rota"):
            skew = check_clock(rota.store, Ahead(), lease_seconds=30)
            in_step = check_clock(rota.store, SystemClock(), lease_seconds=30)
            fake = check_clock(rota.store, FakeClock(START), lease_seconds=30)
    finally:
        sql_store(rota).engine.dispose()
    assert skew is not None and abs(skew - SKEW) < timedelta(seconds=1)
    assert in_step is not None and abs(in_step) < timedelta(seconds=1)
    assert fake is None
    (warning,) = [r for r in caplog.records if getattr(r, "event", "") == "worker.clock_skew"]
    # The reading is off by up to half a round trip (a first connection included), so the
    # skew is compared within a tolerance and the message must show the measured value.
    measured = warning.__dict__["skew_seconds"]
    assert abs(measured - SKEW.total_seconds()) < 1
    assert abs(measured - skew.total_seconds()) < 1e-6
    message = warning.getMessage()
    assert message.split(";")[0] == (
        f"this host's clock is {measured:.1f} s ahead of the database server's"
    )
    assert "beyond 20 s ahead" in message


def test_offset_takes_the_remote_reading_at_the_round_trips_middle() -> None:
    sent = START
    received = START + timedelta(milliseconds=200)
    assert offset(sent, START + timedelta(seconds=5), received) == timedelta(seconds=4.9)
    assert offset(sent, START + timedelta(milliseconds=100), received) == timedelta(0)
