"""The execution log's records and fields, its JSON form, and lifecycle hooks."""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Callable
from datetime import timedelta
from typing import Any

import pytest

from rota import JobContext, Rota, TaskDefinition
from rota.core.transitions import lease_until
from rota.errors import ConfigError
from rota.observe.events import Event
from rota.testing import FakeClock
from tests.helpers import eventually


def records(caplog: pytest.LogCaptureFixture, name: str) -> list[logging.LogRecord]:
    return [r for r in caplog.records if getattr(r, "event", None) == name]


def field(record: logging.LogRecord, key: str) -> Any:
    """A field the event log set on ``record``; a missing one fails the test."""
    return record.__dict__[key]


def test_every_lifecycle_event_is_one_structured_record(
    make_rota: Callable[..., Rota], clock: FakeClock, caplog: pytest.LogCaptureFixture
) -> None:
    rota = make_rota(lease_seconds=30)
    caplog.set_level(logging.INFO, logger="rota")

    @rota.task(retries=1, retry_delay=5)
    def flaky(ctx: JobContext) -> None:
        raise ValueError(f"attempt {ctx.attempt}")

    @rota.task(timeout=0.05, retries=0)
    async def slow(ctx: JobContext) -> None:
        await asyncio.sleep(5)

    @rota.task(cron="* * * * *")
    def minutely(ctx: JobContext) -> None: ...

    @rota.task
    def fine(ctx: JobContext) -> None: ...

    rota.queue(flaky)
    rota.queue(slow)
    cancelled = rota.queue(fine, delay=60)
    rota.cancel(cancelled)
    lost = rota.queue(fine)
    now = clock.now()
    rota.store.claim("dead-worker", ["default"], ["fine"], 1, now, lease_until(now, 30))
    rota.drain()
    clock.advance(timedelta(minutes=3))
    rota.drain()

    started = records(caplog, "job.started")
    assert sorted((field(r, "task"), field(r, "attempt")) for r in started) == [
        ("fine", 2),  # the lost job, its lost attempt counted
        ("flaky", 1),
        ("flaky", 2),
        *[("minutely", 1)] * 3,
        ("slow", 1),
    ]
    (succeeded,) = [r for r in records(caplog, "job.succeeded") if field(r, "task") == "fine"]
    (retrying,) = records(caplog, "job.retrying")
    assert field(retrying, "attempt") == 1
    assert 3.75 <= field(retrying, "delay") <= 5
    (failed,) = [r for r in records(caplog, "job.failed") if field(r, "task") == "flaky"]
    assert [field(failed, key) for key in ("attempt", "error_code", "error_type", "error")] == [
        2,
        "EXECUTION_FAILED",
        "builtins.ValueError",
        "attempt 2",
    ]
    (cancelled_record,) = records(caplog, "job.cancelled")
    assert field(cancelled_record, "job_id") == cancelled
    (timed_out,) = records(caplog, "job.timed_out")
    assert field(timed_out, "task") == "slow"
    assert field(timed_out, "duration_ms") >= 40, "it ran until its 0.05 s timeout"
    (recovered,) = records(caplog, "job.recovered")
    assert [field(recovered, key) for key in ("job_id", "attempt", "lease_owner")] == [
        lost,
        1,
        "dead-worker",
    ]
    (missed,) = records(caplog, "schedule.missed")
    assert (field(missed, "schedule"), field(missed, "count")) == ("minutely", 1)
    scheduled = records(caplog, "job.scheduled")
    assert [field(r, "schedule") for r in scheduled] == ["minutely"] * 3
    for record in [*started, succeeded, retrying, failed, timed_out, recovered]:
        assert record.name == "rota.events"
        job = rota.job(field(record, "job_id"))
        assert [field(record, key) for key in ("task", "queue", "schedule")] == [
            job.task,
            "default",
            "minutely" if job.task == "minutely" else None,
        ], record.getMessage()
        duration = field(record, "duration_ms")
        if record in started or record is recovered:
            assert duration is None, record.getMessage()
        else:
            assert isinstance(duration, float) and duration >= 0, record.getMessage()
    assert retrying.levelno == logging.WARNING and failed.levelno == logging.ERROR


def test_json_log_format(make_rota: Callable[..., Rota], caplog: pytest.LogCaptureFixture) -> None:
    rota = make_rota(log_format="json")
    caplog.set_level(logging.INFO, logger="rota.events")
    rota.define_task(TaskDefinition(name="hello", handler=lambda: None))
    job_id = rota.queue("hello")
    rota.drain()
    (record,) = records(caplog, "job.succeeded")
    line = json.loads(record.getMessage())
    assert (line["event"], line["job_id"], line["task"], line["attempt"]) == (
        "job.succeeded",
        job_id,
        "hello",
        1,
    )
    with pytest.raises(ConfigError):
        make_rota(log_format="xml")


def test_hooks_sync_and_async_and_a_raising_hook_breaks_nothing(
    make_rota: Callable[..., Rota], caplog: pytest.LogCaptureFixture
) -> None:
    rota = make_rota()
    seen: list[tuple[str, object]] = []
    alerts: list[Event] = []

    @rota.task(retries=0)
    def charge(ctx: JobContext, amount: int) -> None:
        if amount < 0:
            raise ValueError("negative amount")

    def broken(event: Event) -> None:
        raise RuntimeError("hook bug")

    async def alert(event: Event) -> None:
        await asyncio.sleep(0)
        alerts.append(event)

    rota.on("job.failed", broken)
    rota.on("job.failed", alert)
    rota.on("*", lambda event: seen.append((event.name, event.job_id)))
    bad = rota.queue(charge, -1)
    good = rota.queue(charge, 5)

    async def scenario() -> None:
        async with rota:
            await eventually(lambda: alerts and rota.job(good).state.value == "succeeded")

    asyncio.run(asyncio.wait_for(scenario(), 20))
    assert [(e.name, e.job_id, e.task, e.error) for e in alerts] == [
        ("job.failed", bad, "charge", "negative amount")
    ]
    assert ("job.succeeded", good) in seen
    assert "hook bug" in caplog.text
    with pytest.raises(ConfigError, match="unknown event"):
        rota.on("job.fialed", alert)


class Collect(logging.Handler):
    """Keeps the records it is given, unformatted."""

    def __init__(self) -> None:
        super().__init__()
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


def test_json_lines_formatter_for_the_command_line() -> None:
    from rota.observe.logs import JsonLines

    logger = logging.getLogger("rota.test.jsonlines")
    handler = Collect()
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    try:
        from rota.observe.events import EventLog

        EventLog(logger).emit("job.succeeded", job_id=7, task="t", duration_ms=1.5)
        logger.warning("plain %s", "message")
    finally:
        logger.removeHandler(handler)
    event, plain = (json.loads(JsonLines().format(record)) for record in handler.records)
    assert (event["event"], event["job_id"], event["task"], event["level"]) == (
        "job.succeeded",
        7,
        "t",
        "info",
    )
    assert (plain["message"], plain["logger"]) == ("plain message", "rota.test.jsonlines")
