"""Failing schedules on every backend, with a fake clock: ``alert_after_failures=N`` makes a
schedule *failing* after N failed ticks in a row (``schedule.failing`` once, an ERROR log),
and its next good tick emits ``schedule.recovered`` once, whichever instance runs the ticks."""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import timedelta
from typing import Any

import pytest

from rota import ConfigError, Event, JobContext, Rota, TaskDefinition
from rota.testing import FakeClock

FIVE_MINUTES = timedelta(minutes=5)


class Service:
    """One process whose code runs ``report`` every five minutes; it fails while ``broken``."""

    def __init__(self, rota: Rota, broken: list[bool], **options: Any) -> None:
        self.rota = rota
        self.events: list[tuple[str, Any]] = []

        def report(ctx: JobContext) -> None:
            if broken[0]:
                raise RuntimeError("the partner API is down")

        rota.define_task(
            TaskDefinition(name="report", handler=report, cron="*/5 * * * *", retries=0, **options)
        )
        for name in ("schedule.failing", "schedule.recovered"):
            rota.on(name, self.heard)

    def heard(self, event: Event) -> None:
        self.events.append((event.name, event.fields["scheduled_at"]))


def test_failing_and_recovered_fire_once_each_at_the_right_ticks(
    make_rota: Callable[..., Rota], clock: FakeClock, caplog: pytest.LogCaptureFixture
) -> None:
    broken = [True]
    service = Service(make_rota(), broken, alert_after_failures=2)
    start = clock.now()
    seen = []
    with caplog.at_level(logging.INFO, logger="rota"):
        for tick in range(6):
            broken[0] = tick in (0, 1, 2, 5)
            service.rota.drain()
            seen.append(service.rota.get_schedule("report").failing)
            clock.advance(FIVE_MINUTES)
    assert seen == [False, True, True, False, False, False]
    assert service.events == [
        ("schedule.failing", start + FIVE_MINUTES),
        ("schedule.recovered", start + 3 * FIVE_MINUTES),
    ]
    (failing,) = [r for r in caplog.records if getattr(r, "event", "") == "schedule.failing"]
    assert failing.levelno == logging.ERROR and "partner API is down" in failing.getMessage()
    (status,) = [s for s in service.rota.jobs() if s.id == "report"]
    assert status.failing is False


def test_one_instance_of_the_cluster_reports_each_flip(
    make_rota: Callable[..., Rota], clock: FakeClock
) -> None:
    broken = [True]
    services = [Service(make_rota(), broken, alert_after_failures=2) for _ in range(2)]
    for tick in range(4):
        broken[0] = tick < 3
        services[tick % 2].rota.drain()
        clock.advance(FIVE_MINUTES)
    heard = [name for service in services for name, _ in service.events]
    assert sorted(heard) == ["schedule.failing", "schedule.recovered"]
    assert services[1].events[0][0] == "schedule.failing", "the second failure was the second's"


def test_the_rota_default_applies_to_tasks_without_their_own(
    make_rota: Callable[..., Rota], clock: FakeClock
) -> None:
    quiet = Service(make_rota(), [True])
    quiet.rota.drain()
    assert quiet.events == [] and not quiet.rota.get_schedule("report").failing
    clock.advance(FIVE_MINUTES)
    loud = Service(make_rota(alert_after_failures=1), [True])
    loud.rota.drain()
    assert [name for name, _ in loud.events] == ["schedule.failing"]


def test_a_tick_that_succeeds_on_a_retry_is_no_failure(
    make_rota: Callable[..., Rota], clock: FakeClock
) -> None:
    rota = make_rota(alert_after_failures=1)
    attempts: list[int] = []
    heard: list[Event] = []
    rota.on("schedule.failing", heard.append)

    @rota.task(cron="0 * * * *", retries=1, retry_delay=1)
    def flaky(ctx: JobContext) -> None:
        attempts.append(ctx.attempt)
        if ctx.attempt == 1:
            raise RuntimeError("once")

    rota.drain()
    clock.advance(timedelta(seconds=5))
    rota.drain()
    assert attempts == [1, 2] and heard == []


def test_alert_after_failures_must_be_a_positive_int(make_rota: Callable[..., Rota]) -> None:
    with pytest.raises(ConfigError):
        make_rota(alert_after_failures=0)
    with pytest.raises(ConfigError):
        TaskDefinition(name="t", handler=lambda: None, alert_after_failures=0)
