"""The public API's semantics as DESIGN.md states them, on every backend, through public calls.

Each test is one behaviour a new user relies on: ``cancel`` answers ``False`` for what it cannot
find, schedules start at the first tick at or after their creation, ``jobs()`` has no hidden
cap, jobs and queues pause, ``ctx.cancelled`` reads as a bool, arguments are bound at enqueue,
unique keys belong to their task.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

import rota as package
from rota import Enqueue, InvalidArguments, JobContext, JobNotFound, JobState, Rota, RotaError
from rota.core.clock import SystemClock
from rota.testing import FakeClock
from tests.helpers import eventually

MIDNIGHT = datetime(2026, 3, 2, tzinfo=timezone.utc)


def test_cancel_answers_false_for_what_it_cannot_find_or_has_ended(rota: Rota) -> None:
    @rota.task
    def work(ctx: JobContext) -> None: ...

    assert rota.cancel(987_654) is False
    assert rota.cancel("no-such-schedule") is False
    assert rota.cancel("bad\x00name") is False
    with pytest.raises(JobNotFound):
        rota.job(987_654)
    done = rota.queue(work)
    assert rota.drain().succeeded == 1
    assert rota.cancel(done) is False
    waiting = rota.queue(work, delay=60)
    assert rota.cancel(waiting) is True
    assert rota.cancel(waiting) is False
    assert rota.job(waiting).state is JobState.CANCELLED


def test_a_schedule_starts_at_the_first_tick_at_or_after_its_creation(
    make_rota: Callable[..., Rota],
) -> None:
    clock = FakeClock(MIDNIGHT)
    rota = make_rota(clock=clock)
    ran: list[datetime | None] = []

    @rota.task(cron="*/5 * * * *")
    def five(ctx: JobContext) -> None:
        ran.append(ctx.scheduled_at)

    @rota.task
    def report(ctx: JobContext) -> None:
        ran.append(ctx.scheduled_at)

    assert rota.drain().succeeded == 1
    assert ran == [MIDNIGHT], "the 00:00 tick of a schedule defined at 00:00:00"

    clock.advance(timedelta(minutes=4, seconds=59))
    assert rota.drain().total == 0
    clock.advance(timedelta(seconds=1))  # 00:05:00
    assert rota.drain().succeeded == 1
    clock.advance(timedelta(minutes=5))  # 00:10:00
    rota.schedule("*/10 * * * *", report, name="report")
    assert rota.drain().succeeded == 2, "00:10 of the new schedule and of the old one"
    assert ran == [MIDNIGHT + timedelta(minutes=n) for n in (0, 5, 10, 10)]

    assert rota.pause("report")
    clock.advance(timedelta(minutes=10))  # 00:20:00
    ran.clear()
    assert rota.resume("report")
    rota.drain()
    assert ran.count(MIDNIGHT + timedelta(minutes=20)) == 2, "resumed at 00:20 runs 00:20"

    clock.advance(timedelta(minutes=10))  # 00:30:00
    rota.schedule("*/15 * * * *", report, name="report")
    ran.clear()
    rota.drain()
    assert ran.count(MIDNIGHT + timedelta(minutes=30)) == 2, "changed at 00:30 runs 00:30"

    clock.advance(timedelta(minutes=16))  # 00:46:00
    rota.drain()
    ran.clear()
    rota.update_schedule("five", cron="*/2 * * * *")  # an override, made at 00:46:00
    rota.drain()
    assert ran == [MIDNIGHT + timedelta(minutes=46)], "overridden at 00:46 runs 00:46"


def test_jobs_lists_everything_live_and_counts_are_exact(rota: Rota, clock: FakeClock) -> None:
    @rota.task(cron="@daily")
    def nightly(ctx: JobContext) -> None: ...

    @rota.task(queue="mail")
    def send(ctx: JobContext, n: int) -> None: ...

    @rota.task
    def other(ctx: JobContext) -> None: ...

    rota.queue(other)
    rota.drain()
    clock.advance(1)
    ids = rota.queue_many([Enqueue(send, n) for n in range(1_205)])
    paused = rota.queue(other)
    assert rota.pause(paused)
    statuses = rota.jobs()
    assert [s.id for s in statuses[:1]] == ["nightly"]
    listed = [s.id for s in statuses[1:]]
    assert sorted(listed) == sorted([*ids, paused]), "no silent cap"
    assert listed[0] == paused, "newest first"
    assert [s.status for s in statuses[1:3]] == ["paused", "pending"]
    bounded = rota.jobs(limit=10)
    assert bounded[0].id == "nightly" and len(bounded) == 11
    assert [s.id for s in rota.jobs(limit=0)] == ["nightly"]
    with pytest.raises(InvalidArguments):
        rota.jobs(limit=-1)

    counts = rota.counts()
    assert isinstance(counts, package.Counts)
    assert counts.by_state["pending"] == 1_205
    assert counts.by_state[JobState.PAUSED] == 1
    assert counts.by_state["succeeded"] == 1
    assert counts.by_state["failed"] == 0
    assert counts.total == 1_207
    assert counts.by_queue["mail"]["pending"] == 1_205
    assert counts.by_queue["default"] == {
        **dict.fromkeys(counts.by_state, 0),
        "paused": 1,
        "succeeded": 1,
    }
    assert counts.by_task["send"]["pending"] == 1_205
    assert counts.by_task["other"]["succeeded"] == 1 and "nightly" not in counts.by_task
    clock.advance(timedelta(days=3))
    assert rota.prune() == 0, "within the retention of succeeded jobs"
    assert rota.counts() == counts, "finished three days ago, still counted"
    assert rota.counts(finished_since=clock.now() - timedelta(days=1)).by_state["succeeded"] == 0


def test_a_paused_job_is_never_claimed_until_resumed(rota: Rota) -> None:
    ran: list[int] = []

    @rota.task
    def work(ctx: JobContext) -> None:
        ran.append(ctx.job_id)

    held = rota.queue(work)
    free = rota.queue(work)
    assert rota.pause(held) is True
    assert rota.pause(held) is False, "already paused"
    assert rota.job(held).state is JobState.PAUSED
    assert {s.id: s.status for s in rota.jobs()}[held] == "paused"
    assert rota.drain().succeeded == 1
    assert ran == [free]
    assert rota.pause(free) is False, "a finished job cannot be paused"
    assert rota.resume(held) is True
    assert rota.resume(held) is False
    assert rota.drain().succeeded == 1
    assert ran == [free, held]
    with pytest.raises(JobNotFound):
        rota.pause(987_654)

    waiting = rota.queue(work)
    rota.pause(waiting)
    assert rota.cancel(waiting) is True, "a paused job can be cancelled"
    assert rota.job(waiting).state is JobState.CANCELLED


@pytest.mark.slow
def test_a_paused_queue_is_claimed_by_no_worker_until_resumed(
    make_rota: Callable[..., Rota],
) -> None:
    """One instance pauses the queue; another's running worker sees it at its next claim."""
    admin, runner = make_rota(clock=SystemClock()), make_rota(clock=SystemClock())
    ran: list[str] = []

    @runner.task(queue="mail")
    async def send(ctx: JobContext, to: str) -> None:
        ran.append(to)

    @runner.task
    async def other(ctx: JobContext) -> None:
        ran.append("other")

    assert admin.pause_queue("mail") is True
    assert admin.pause_queue("mail") is False
    assert admin.paused_queues() == ["mail"]
    asyncio.run(paused_then_resumed(admin, runner, ran))
    assert ran == ["other", "a@example.com"]
    assert admin.resume_queue("mail") is False


async def paused_then_resumed(admin: Rota, runner: Rota, ran: list[str]) -> None:
    async with runner:
        held = await runner.aqueue("send", "a@example.com")
        await runner.aqueue("other")
        await eventually(lambda: ran == ["other"])
        await asyncio.sleep(0.5)  # ten polls of 50 ms: none may claim the paused queue
        assert ran == ["other"]
        assert runner.job(held).state is JobState.PAUSED, "its queue is paused"
        assert {s.id: s.status for s in runner.jobs()}[held] == "paused"
        assert runner.counts().by_queue["mail"]["paused"] == 1
        assert await asyncio.to_thread(admin.resume_queue, "mail") is True
        await eventually(lambda: runner.job(held).state is JobState.SUCCEEDED)


def test_pause_without_an_id_pauses_every_schedule_and_every_queue(
    make_rota: Callable[..., Rota], clock: FakeClock
) -> None:
    rota = make_rota()

    @rota.task(cron="* * * * *")
    def minutely(ctx: JobContext) -> None: ...

    @rota.task(queue="mail")
    def send(ctx: JobContext) -> None: ...

    rota.drain()
    other_service = make_rota()
    other_service.queue("report", queue="reports")  # a queue this process has no task for
    assert rota.pause() is True
    assert rota.paused_queues() == ["default", "mail", "reports"]
    rota.queue(send)
    clock.advance(timedelta(minutes=1))
    assert rota.drain().total == 0
    assert rota.resume() is True
    assert rota.paused_queues() == []
    assert rota.drain().succeeded == 2, "the mail job and the tick at the moment of resuming"
    assert rota.pause() is True and rota.pause() is False


def test_ctx_cancelled_is_truthy_exactly_when_the_attempt_should_stop(rota: Rota) -> None:
    seen: dict[str, object] = {}

    @rota.task
    def polite(ctx: JobContext) -> str:
        if ctx.cancelled:
            seen["polite"] = "stopped early"
            return "stopped"
        seen["polite"] = (bool(ctx.cancelled), ctx.cancelled.is_set(), ctx.cancelled.wait(0))
        return "done"

    @rota.task(timeout=0.2, retries=0)
    def slow(ctx: JobContext) -> None:
        waited = ctx.cancelled.wait(10)
        seen["slow"] = (waited, bool(ctx.cancelled), ctx.cancelled.is_set())

    rota.queue(polite)
    slow_id = rota.queue(slow)
    result = rota.drain()
    assert seen["polite"] == (False, False, False), "a running attempt is not cancelled"
    assert (result.succeeded, result.failed) == (1, 1)
    assert rota.job(slow_id).errors[-1].code == "TIMEOUT"
    for _ in range(100):
        if "slow" in seen:
            break
        threading.Event().wait(0.01)
    assert seen["slow"] == (True, True, True)


def test_arguments_are_bound_to_the_handler_at_enqueue(rota: Rota) -> None:
    @rota.task
    def send_email(ctx: JobContext, to: str, subject: str = "hi") -> None: ...

    @rota.task
    def no_parameters() -> None: ...

    refusals: list[tuple[Callable[[], object], str]] = [
        (lambda: rota.queue(send_email), "missing a required argument: 'to'"),
        (lambda: rota.queue(send_email, "a", "b", "c"), "too many positional arguments"),
        (lambda: rota.queue(send_email, "a", subjet="x"), "unexpected keyword argument 'subjet'"),
        (lambda: rota.queue(no_parameters, 1), "takes no parameters"),
        (
            lambda: rota.queue_many([Enqueue(send_email, "a"), Enqueue(send_email, "a", body="")]),
            "unexpected keyword argument 'body'",
        ),
        (lambda: asyncio.run(rota.aqueue(send_email, "a", too="x")), "'too'"),
        (lambda: rota.schedule("@daily", send_email, name="s"), "'to'"),
    ]
    for refuse, message in refusals:
        with pytest.raises(InvalidArguments, match=message) as info:
            refuse()
        assert info.value.code == "INVALID_ARGUMENTS"
    assert rota.jobs() == [], "nothing was written"
    rota.queue(send_email, "a@example.com", subject="x")
    rota.queue(send_email, to="b@example.com")
    assert rota.drain().succeeded == 2


def test_a_job_queued_by_name_with_arguments_the_handler_refuses_fails_at_once(
    make_rota: Callable[..., Rota],
) -> None:
    producer, worker = make_rota(), make_rota()

    @worker.task(retries=5)
    def send_email(ctx: JobContext, to: str) -> None: ...

    job_id = producer.queue("send_email", "a@example.com", cc="b@example.com")
    assert worker.drain().failed == 1
    job = worker.job(job_id)
    assert (job.state, job.attempt) == (JobState.FAILED, 1), "no retries"
    assert job.errors[-1].code == "INVALID_ARGUMENTS"
    assert "unexpected keyword argument 'cc'" in job.errors[-1].message


def test_unique_keys_are_scoped_per_task(rota: Rota) -> None:
    @rota.task
    def invoice(ctx: JobContext, n: int) -> None: ...

    @rota.task
    def receipt(ctx: JobContext, n: int) -> None: ...

    first = rota.queue(invoice, 1, unique_key="order:42")
    other_task = rota.queue(receipt, 1, unique_key="order:42")
    assert first != other_task
    assert rota.queue(invoice, 2, unique_key="order:42") == first
    assert rota.drain().succeeded == 2


NOT_A_NUMBER = float("nan")


@pytest.mark.parametrize(
    "call",
    [
        pytest.param(lambda r, t: r.queue(t, delay=NOT_A_NUMBER), id="delay-nan"),
        pytest.param(lambda r, t: r.queue(t, delay=float("inf")), id="delay-inf"),
        pytest.param(lambda r, t: r.queue(t, delay=-1), id="delay-negative"),
        pytest.param(lambda r, t: r.queue(t, delay="10"), id="delay-string"),
        pytest.param(lambda r, t: r.queue(t, delay=1e300), id="delay-overflow"),
        pytest.param(lambda r, t: r.queue(t, delay=timedelta.max), id="delay-timedelta-max"),
        pytest.param(lambda r, t: r.queue(t, run_at=datetime.max), id="run-at-max"),
        pytest.param(
            lambda r, t: r.queue(t, run_at=datetime.min.replace(tzinfo=timezone.utc)),
            id="run-at-min",
        ),
        pytest.param(
            lambda r, t: r.queue(
                t, run_at=datetime.max.replace(tzinfo=timezone(-timedelta(hours=5)))
            ),
            id="run-at-overflows-utc",
        ),
        pytest.param(lambda r, t: r.queue(t, run_at="tomorrow"), id="run-at-string"),
        pytest.param(lambda r, t: r.queue(t, priority="high"), id="priority-string"),
        pytest.param(lambda r, t: r.queue(t, priority=1001), id="priority-too-high"),
        pytest.param(lambda r, t: r.queue(t, priority=-1001), id="priority-too-low"),
        pytest.param(lambda r, t: r.queue(t, priority=1.5), id="priority-float"),
        pytest.param(lambda r, t: r.queue(t, priority=True), id="priority-bool"),
        pytest.param(lambda r, t: r.job("1"), id="job-str"),
        pytest.param(lambda r, t: r.job(None), id="job-none"),
        pytest.param(lambda r, t: r.job(1.0), id="job-float"),
        pytest.param(lambda r, t: r.cancel(None), id="cancel-none"),
        pytest.param(lambda r, t: r.pause(2.5), id="pause-float"),
        pytest.param(lambda r, t: r.pause_queue("bad\u202ename"), id="queue-bidi"),
        pytest.param(lambda r, t: r.queue(t, queue="zero\u200bwidth"), id="queue-zero-width"),
        pytest.param(lambda r, t: r.queue(t, unique_key="c1\x9bcontrol"), id="key-c1"),
        pytest.param(lambda r, t: r.queue("task\u202e"), id="task-bidi"),
        pytest.param(lambda r, t: r.schedule("*/1000000000000 * * * *", t), id="cron-step"),
        pytest.param(lambda r, t: r.schedule("* * * * *", t, priority="x"), id="sched-priority"),
    ],
)
def test_bad_input_is_a_typed_error_and_writes_nothing(
    rota: Rota, call: Callable[[Rota, object], object]
) -> None:
    @rota.task
    def work(ctx: JobContext) -> None: ...

    with pytest.raises(RotaError) as info:
        call(rota, work)
    assert info.value.code in {"INVALID_ARGUMENTS", "INVALID_CRON", "CONFIG_ERROR"}
    assert rota.jobs() == []
    assert rota.counts().total == 0


@pytest.mark.parametrize(
    "options",
    [
        {"timeout": float("nan")},
        {"timeout": float("inf")},
        {"timeout": 0},
        {"retry_delay": float("nan")},
        {"retry_delay": -1},
        {"retry_cap": float("inf")},
        {"retries": 1.5},
        {"retries": -1},
        {"priority": "high"},
        {"priority": 5000},
        {"cron": "*/1000000000000 * * * *"},
        {"queue": "bidi\u202d"},
        {"name": "soft\u00adhyphen"},
    ],
    ids=repr,
)
def test_bad_task_options_are_config_errors(rota: Rota, options: dict[str, object]) -> None:
    def handler(ctx: JobContext) -> None: ...

    with pytest.raises(RotaError) as info:
        rota.task(**options)(handler)  # type: ignore[call-overload]
    assert info.value.code in {"CONFIG_ERROR", "INVALID_CRON"}


def test_a_cron_task_must_take_no_arguments(rota: Rota) -> None:
    def needs(ctx: JobContext, account: int) -> None: ...

    with pytest.raises(RotaError, match="called with no arguments") as info:
        rota.task(cron="@daily")(needs)
    assert info.value.code == "CONFIG_ERROR"


@pytest.mark.parametrize(
    "options",
    [
        {"concurrency": 0},
        {"concurrency": "5"},
        {"poll_interval": float("nan")},
        {"lease_seconds": float("inf")},
        {"connect_timeout": -1},
        {"misfire_grace": float("nan")},
        {"max_missed_runs": 1.5},
        {"max_payload_bytes": 0},
        {"succeeded_retention": float("nan")},
        {"failed_retention": -3600},
        {"succeeded_retention": "7 days"},
        {"queues": {"mail": 0}},
        {"table_prefix": "x'; DROP"},
        {"table_prefix": "ünï_"},
    ],
    ids=repr,
)
def test_bad_settings_are_config_errors(options: dict[str, object], tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path}/rota.db"
    Rota(url)
    with pytest.raises(RotaError) as info:
        Rota(url, **options)  # type: ignore[arg-type]
    assert info.value.code == "CONFIG_ERROR"


def test_retention_may_be_given_in_seconds(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path}/rota.db"
    rota = Rota(url, succeeded_retention=3600, failed_retention=timedelta(days=2))
    assert rota.config.succeeded_retention == timedelta(hours=1)
    assert rota.config.failed_retention == timedelta(days=2)


def test_every_error_class_a_caller_catches_and_the_event_type_are_importable_from_rota() -> None:
    from rota import errors

    classes = [
        value
        for value in vars(errors).values()
        if isinstance(value, type) and issubclass(value, errors.RotaError)
    ]
    assert len(classes) > 10
    for error in classes:  # the contract: every code's class, recorded-only ones too
        assert getattr(package, error.__name__, None) is error, error.__name__
        assert error.__name__ in package.__all__, error.__name__
    codes = [error.code for error in classes]
    assert len(codes) == len(set(codes)), "codes are unique"
    assert all(isinstance(code, package.ErrorCode) for code in codes)
    assert package.JobCancelled.code == "JOB_CANCELLED"
    from rota.observe.events import Event

    assert package.Event is Event and package.Counts.__name__ == "Counts"
