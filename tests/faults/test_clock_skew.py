"""Two instances whose clocks are 30 s apart still enqueue exactly one job per tick.

The instance ahead fires each tick 30 s early by the other's clock; the one behind must then
find the tick taken (the schedule's next run moved on, and the unique ``(schedule, tick)``
index), never fire it again, and never count it as missed.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from datetime import datetime, timedelta

import pytest

from rota import JobContext, Rota
from rota.runtime.scheduler import fire_due
from rota.testing import FakeClock
from tests.conftest import START

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


def test_skewed_instances_enqueue_one_job_per_tick(
    make_rota: Callable[..., Rota], clock: FakeClock, caplog: pytest.LogCaptureFixture
) -> None:
    instances = [make_rota(clock=clock), make_rota(clock=Skewed(clock, SKEW))]
    for instance in instances:

        @instance.task(name="every_minute", cron="* * * * *")
        def every_minute(ctx: JobContext) -> None: ...

        instance._ensure_ready()
        instance._sync_schedules()
    barrier = threading.Barrier(len(instances))
    errors: list[BaseException] = []

    def fire(instance: Rota) -> None:
        try:
            for _ in range(STEPS):
                barrier.wait()
                if instance is instances[0]:
                    clock.advance(STEP)
                barrier.wait()
                fire_due(
                    instance.store.schedules,
                    instance.registry,
                    instance._scheduler_settings(),
                    instance.events,
                    instance.clock.now(),
                )
        except BaseException as error:
            errors.append(error)
            barrier.abort()

    with caplog.at_level(logging.INFO, logger="rota"):
        threads = [threading.Thread(target=fire, args=(i,)) for i in instances]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()

    assert errors == []
    ticks = [job.scheduled_at for job in instances[0].store.jobs(task="every_minute", limit=999)]
    last = START + STEPS * STEP + SKEW
    minutes = (last - START) // timedelta(minutes=1)
    expected = [START + n * timedelta(minutes=1) for n in range(1, minutes + 1)]
    assert sorted(tick for tick in ticks if tick is not None) == expected
    assert len(ticks) == len(expected)
    missed = [r for r in caplog.records if getattr(r, "event", "") == "schedule.missed"]
    assert missed == []
