"""Overlap policies through the public API, on every backend, with a fake clock: a tick while
the previous run is unfinished is skipped (history and ``schedule.skipped``), queued behind it,
or allowed beside it; manual runs are never held back; the policy is part of the definition,
overridable at runtime like the cron."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

import pytest

from rota import ConfigError, InvalidArguments, JobContext, Rota, ScheduleAction, Snooze
from rota.testing import FakeClock
from tests.conftest import START
from tests.test_schedules import MINUTE, scheduled_jobs

IDLE = "nothing-here"
"""A queue no job is in: ``drain(IDLE)`` fires the due ticks and runs no job."""


def every_minute(rota: Rota, overlap: str, ran: list[Any], **options: Any) -> None:
    @rota.task(cron="* * * * *", name="sync", overlap=overlap, **options)
    def sync(ctx: JobContext) -> None:
        ran.append(ctx.scheduled_at)


def test_skip_is_the_default_records_the_tick_and_announces_it(
    rota: Rota, clock: FakeClock, caplog: pytest.LogCaptureFixture
) -> None:
    ran: list[Any] = []

    @rota.task(cron="* * * * *", name="sync")
    def sync(ctx: JobContext) -> None:
        ran.append(ctx.scheduled_at)

    rota.drain(IDLE)
    clock.advance(MINUTE)
    with caplog.at_level(logging.INFO, logger="rota"):
        rota.drain(IDLE)
    assert scheduled_jobs(rota) == [("sync", START)], "the second tick enqueued nothing"
    assert rota.get_schedule("sync").spec.overlap == "skip"
    latest = rota.schedule_history("sync", limit=1)[0]
    assert (latest.action, latest.actor) == (ScheduleAction.SKIPPED, "scheduler")
    assert latest.new is not None and latest.new["tick"] == (START + MINUTE).isoformat()
    (record,) = [r for r in caplog.records if "schedule.skipped" in r.getMessage()]
    assert "sync" in record.getMessage()
    assert rota.drain().succeeded == 1 and ran == [START]
    clock.advance(MINUTE)
    assert rota.drain().succeeded == 1, "the previous run ended: the next tick runs"
    assert ran == [START, START + 2 * MINUTE]


def test_a_run_waiting_to_retry_or_snoozed_is_unfinished(rota: Rota, clock: FakeClock) -> None:
    calls: list[Any] = []

    @rota.task(cron="* * * * *", name="sync")
    def sync(ctx: JobContext) -> None:
        calls.append(ctx.scheduled_at)
        raise Snooze(600)

    rota.drain()
    clock.advance(MINUTE)
    rota.drain()
    assert calls == [START] and scheduled_jobs(rota) == [("sync", START)]


def test_queue_runs_the_ticks_one_after_another_even_after_a_failure(
    rota: Rota, clock: FakeClock
) -> None:
    ran: list[Any] = []

    @rota.task(cron="* * * * *", name="sync", overlap="queue", retries=0)
    def sync(ctx: JobContext) -> None:
        ran.append(ctx.scheduled_at)
        if ctx.scheduled_at == START:
            raise ValueError("the first run fails")

    rota.drain(IDLE)
    clock.advance(MINUTE)
    rota.drain(IDLE)
    first, _second = sorted(rota.store.reads.jobs(), key=lambda job: job.id)
    assert rota.pause(first.id), "the first run held: the second must wait for it"
    assert rota.drain().total == 0
    assert rota.resume(first.id)
    result = rota.drain()
    assert (result.failed, result.succeeded, result.cancelled) == (1, 1, 0)
    assert ran == [START, START + MINUTE]


def test_allow_enqueues_every_tick_beside_the_unfinished_one(rota: Rota, clock: FakeClock) -> None:
    ran: list[Any] = []
    every_minute(rota, "allow", ran)
    rota.drain(IDLE)
    clock.advance(MINUTE)
    rota.drain(IDLE)
    assert scheduled_jobs(rota) == [("sync", START), ("sync", START + MINUTE)]
    assert rota.drain().succeeded == 2


def test_a_manual_run_is_not_held_back_but_counts_as_unfinished(
    rota: Rota, clock: FakeClock
) -> None:
    ran: list[Any] = []
    every_minute(rota, "skip", ran)
    rota.drain(IDLE)
    rota.run_now("sync")
    assert len(rota.store.reads.jobs()) == 2, "manual run beside the unfinished tick"
    assert rota.drain().succeeded == 2
    clock.advance(30)
    rota.run_now("sync")
    clock.advance(30)
    rota.drain(IDLE)
    assert len(scheduled_jobs(rota)) == 3, "the tick gave way to the unfinished manual run"
    assert rota.schedule_history("sync", limit=1)[0].action is ScheduleAction.SKIPPED


def test_overlap_is_overridden_at_runtime_kept_and_reset(
    make_rota: Callable[..., Rota], clock: FakeClock
) -> None:
    rota = make_rota()
    every_minute(rota, "skip", [])
    rota.drain(IDLE)
    changed = rota.update_schedule("sync", overlap="allow")
    assert (changed.spec.overlap, changed.code_overlap, changed.overridden) == (
        "allow",
        "skip",
        True,
    )
    assert changed.next_run_at == START + MINUTE, "the cron did not change: nor its next run"
    latest = rota.schedule_history("sync", limit=1)[0]
    assert (latest.action, latest.old, latest.new) == (
        ScheduleAction.OVERRIDDEN,
        {"overlap": "skip"},
        {"overlap": "allow"},
    )
    restarted = make_rota()
    every_minute(restarted, "skip", [])
    clock.advance(MINUTE)
    restarted.drain(IDLE)
    assert len(scheduled_jobs(rota)) == 2, "the override holds across a restart"
    assert restarted.reset_schedule("sync")
    assert rota.get_schedule("sync").spec.overlap == "skip"
    deployed = make_rota()
    every_minute(deployed, "queue", [])
    deployed.drain(IDLE)
    assert deployed.get_schedule("sync").spec.overlap == "queue", "code's new policy"
    deployed.update_schedule("sync", overlap="allow")
    redeployed = make_rota()
    every_minute(redeployed, "skip", [])
    redeployed.drain(IDLE)
    schedule = redeployed.get_schedule("sync")
    assert (schedule.spec.overlap, schedule.overridden) == ("skip", False), "code changed"


def test_bad_policies_are_refused(rota: Rota) -> None:
    with pytest.raises(ConfigError, match="overlap must be one of allow, skip, queue"):
        every_minute(rota, "sometimes", [])
    every_minute(rota, "skip", [])
    rota.drain(IDLE)
    with pytest.raises(InvalidArguments, match="overlap"):
        rota.update_schedule("sync", overlap="never")
    with pytest.raises(ConfigError, match="overlap"):
        rota.schedule("* * * * *", "sync", name="other", overlap="twice")
    assert rota.schedule("* * * * *", "sync", name="other", overlap="queue") == "other"
    assert rota.get_schedule("other").spec.overlap == "queue"
