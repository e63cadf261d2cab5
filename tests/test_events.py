"""The execution log's records and fields, its JSON form, lifecycle hooks, and event names: every
name rota emits is an ``EventName``, and ``on`` and ``emit`` refuse any other."""

from __future__ import annotations

import asyncio
import json
import logging
import re
import threading
from collections.abc import Callable, Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from rota import EventName, JobContext, Rota, TaskDefinition
from rota.core.transitions import lease_until
from rota.errors import ConfigError, TransientStoreError
from rota.observe.events import Event, EventLog
from rota.runtime.services.readiness import DatabaseWait
from rota.store.values import UnreadableRow
from rota.testing import FakeClock
from tests.helpers import eventually, sql_store, wait_until

pytestmark = pytest.mark.sqlite_only


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

    @rota.task(cron="* * * * *", overlap="allow")  # the three ticks of one pass run
    def minutely(ctx: JobContext) -> None: ...

    @rota.task
    def fine(ctx: JobContext) -> None: ...

    rota.queue(flaky)
    rota.queue(slow)
    cancelled = rota.queue(fine, delay=60)
    rota.cancel(cancelled)
    lost = rota.queue(fine)
    now = clock.now()
    rota.store.jobs.claim("dead-worker", ["default"], ["fine"], 1, now, lease_until(now, 30))
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


@pytest.fixture
def lite(tmp_path: Path, clock: FakeClock) -> Iterator[Rota]:
    """A Rota on SQLite: hooks and names are the same whatever the database."""
    rota = Rota(f"sqlite:///{tmp_path}/rota.db", clock=clock, poll_interval=0.05)
    yield rota
    sql_store(rota).engine.dispose()


def hear(rota: Rota, *names: str) -> list[Event]:
    heard: list[Event] = []
    for name in names:
        rota.on(name, heard.append)
    return heard


def test_on_accepts_every_event_name_and_suggests_the_nearest_for_others(lite: Rota) -> None:
    for name in EventName:
        lite.on(name, lambda event: None)
        lite.on(name.value, lambda event: None)
    with pytest.raises(
        ConfigError, match=re.escape("unknown event 'job.fialed'; did you mean 'job.failed'")
    ):
        lite.on("job.fialed", lambda event: None)
    with pytest.raises(ConfigError, match="unknown event 'nothing'"):
        lite.on("nothing", lambda event: None)


def test_emit_refuses_a_name_that_is_not_an_event_name() -> None:
    events = EventLog(logging.getLogger("rota.test.names"))
    heard: list[Event] = []
    events.on("*", heard.append)
    events.emit(EventName.JOB_SUCCEEDED, job_id=1)
    events.emit("job.succeeded", job_id=2)
    with pytest.raises(ConfigError, match=re.escape("did you mean 'job.succeeded'")):
        events.emit("job.succeded", job_id=3)
    with pytest.raises(ConfigError):
        events.log(logging.getLogger("rota.test.names"), "db.gone", logging.WARNING, "gone")
    wait_until(lambda: len(heard) == 2)  # hooks run on their own threads
    assert [(event.name, event.job_id) for event in heard] == [
        ("job.succeeded", 1),
        ("job.succeeded", 2),
    ]


def test_pausing_and_resuming_jobs_and_queues_reach_hooks(lite: Rota) -> None:
    heard = hear(lite, "job.paused", "job.resumed", "queue.paused", "queue.resumed")

    @lite.task(queue="mail")
    def send(ctx: JobContext) -> None: ...

    job_id = lite.queue(send, delay=60)
    assert lite.pause(job_id) and lite.resume(job_id)
    assert lite.pause_queue("mail") and lite.resume_queue("mail")
    assert not lite.resume(job_id), "nothing changed, nothing announced"
    wait_until(lambda: len(heard) >= 4)
    # One job's events arrive in order, and so do the process's; the two lanes are not ordered
    # with each other.
    said = [(event.name, event.fields) for event in heard]
    assert [(name, fields) for name, fields in said if name.startswith("job.")] == [
        ("job.paused", {"job_id": job_id}),
        ("job.resumed", {"job_id": job_id}),
    ]
    assert [(name, fields) for name, fields in said if name.startswith("queue.")] == [
        ("queue.paused", {"queue": "mail"}),
        ("queue.resumed", {"queue": "mail"}),
    ]
    assert len(said) == 4


def test_a_manual_retry_is_announced_once_it_applied(lite: Rota) -> None:
    heard = hear(lite, "job.retried")

    @lite.task(retries=0)
    def broken(ctx: JobContext) -> None:
        raise ValueError("no")

    failed, waiting = lite.queue(broken), lite.queue(broken, delay=60)
    lite.drain()
    assert lite.retry(failed) and not lite.retry(waiting)
    wait_until(lambda: len(heard) >= 1)
    (retried,) = heard
    assert (retried.job_id, retried.task, retried.attempt) == (failed, "broken", 1)
    assert lite.job(failed).state.value == "pending", "the hook may read what it names"


def test_worker_stopping_reaches_hooks_when_a_stop_begins(lite: Rota) -> None:
    heard = hear(lite, "worker.started", "worker.stopping", "worker.stopped")

    async def scenario() -> None:
        async with lite:
            await asyncio.sleep(0)

    asyncio.run(asyncio.wait_for(scenario(), 20))
    wait_until(lambda: len(heard) >= 3)
    assert [event.name for event in heard] == [
        "worker.started",
        "worker.stopping",
        "worker.stopped",
    ]
    stopping = heard[1]
    assert stopping.fields["worker"] == heard[0].fields["worker"]
    assert stopping.fields["grace"] == 30


def test_what_the_store_meets_reaches_hooks_with_its_own_record(
    lite: Rota, caplog: pytest.LogCaptureFixture
) -> None:
    heard = hear(lite, "row.unreadable")
    caplog.set_level(logging.WARNING, logger="rota.store")
    row = UnreadableRow("worker", "w1", "its tasks are not JSON")

    assert sql_store(lite).database.readable([row]) == []

    wait_until(lambda: len(heard) >= 1)
    (event,) = heard
    assert event.fields == {"kind": "worker", "key": "w1"}
    (record,) = records(caplog, "row.unreadable")
    assert (record.name, record.levelno, field(record, "key")) == (
        "rota.store",
        logging.WARNING,
        "w1",
    )
    assert "cannot be read" in record.getMessage()


def test_an_operational_event_is_a_sentence_on_its_modules_logger_and_reaches_hooks(
    caplog: pytest.LogCaptureFixture,
) -> None:
    events = EventLog()
    heard: list[Event] = []
    events.on("db.unavailable", heard.append)
    events.on("db.available", heard.append)
    failures = iter([TransientStoreError("refused"), TransientStoreError("refused")])

    def attempt() -> str:
        error = next(failures, None)
        if error is not None:
            raise error
        return "connected"

    class NoWait(threading.Event):
        def wait(self, timeout: float | None = None) -> bool:
            return False

    with caplog.at_level(logging.INFO, logger="rota"):
        assert DatabaseWait("test database", None, events).retry(attempt, NoWait()) == "connected"
    wait_until(lambda: len(heard) == 3)  # hooks run on their own threads, in order
    assert [(event.name, event.fields) for event in heard] == [
        ("db.unavailable", {"attempt": 1}),
        ("db.unavailable", {"attempt": 2}),
        ("db.available", {"attempts": 3}),
    ]
    first = records(caplog, "db.unavailable")[0]
    assert first.name == "rota" and first.getMessage().startswith("cannot reach the test database")
