"""Handler outcomes on every backend: ``Retry``, ``Snooze``, ``Fail`` and the retry filters.

DESIGN.md, "Handler outcomes and results": ``Retry`` spends the attempt and retries within
``retries`` after its delay (else the back-off); ``Snooze`` gives the attempt back and counts a
snooze, failing with ``SNOOZE_LIMIT`` past ``max_snoozes``; ``Fail`` fails at once with
``FAILED_BY_HANDLER``; ``retry_on`` / ``no_retry_on`` decide which exceptions are retried, and
a timeout is retried whatever they say.  Sync, async and process-isolated handlers alike; the
isolated ones are module-level functions here, since a child process imports its handler.
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Callable
from datetime import timedelta
from typing import Any

import pytest

from rota import ConfigError, Fail, InvalidArguments, JobContext, JobState, Retry, Rota, Snooze
from rota.core.model import Job
from rota.errors import ErrorCode
from rota.testing import FakeClock

KINDS = ["sync", "async"]


def register(rota: Rota, kind: str, body: Callable[[JobContext], Any], **options: Any) -> str:
    """``body`` as a task named ``outcome`` whose handler is sync or async."""
    if kind == "sync":

        def outcome(ctx: JobContext) -> Any:
            return body(ctx)

        rota.task(**options)(outcome)
    else:

        async def outcome(ctx: JobContext) -> Any:  # type: ignore[misc]
            await asyncio.sleep(0)
            return body(ctx)

        rota.task(**options)(outcome)
    return "outcome"


def seconds_until(rota: Rota, job: Job) -> float:
    return (job.run_at - rota.clock.now()).total_seconds()


@pytest.mark.parametrize("kind", KINDS)
def test_retry_spends_the_attempt_and_waits_its_own_delay(rota: Rota, kind: str) -> None:
    seen: list[int] = []

    def body(ctx: JobContext) -> None:
        seen.append(ctx.attempt)
        raise Retry(delay=timedelta(seconds=30) if ctx.attempt == 1 else 45)

    job_id = rota.queue(register(rota, kind, body, retries=2, retry_on=(TimeoutError,)))
    assert rota.drain().retried == 1
    job = rota.job(job_id)
    assert (job.state, job.attempt, seconds_until(rota, job)) == (JobState.PENDING, 1, 30.0)
    error = job.errors[-1]
    assert (error.code, error.type, error.message) == (
        "EXECUTION_FAILED",
        "rota.outcomes.Retry",
        "retry requested in 30 s",
    )
    assert isinstance(rota.clock, FakeClock)
    rota.clock.advance(30)
    assert rota.drain().retried == 1, "Retry retries whatever retry_on says"
    assert seconds_until(rota, rota.job(job_id)) == 45.0
    rota.clock.advance(45)
    assert rota.drain().failed == 1, "the third attempt was the last of retries=2"
    job = rota.job(job_id)
    assert (job.state, job.attempt, len(job.errors), seen) == (JobState.FAILED, 3, 3, [1, 2, 3])


def test_retry_without_a_delay_backs_off(rota: Rota, clock: FakeClock) -> None:
    @rota.task(retries=1, retry_delay=10)
    def later(ctx: JobContext) -> None:
        raise Retry()

    job_id = rota.queue(later)
    assert rota.drain().retried == 1
    job = rota.job(job_id)
    assert 7.5 <= seconds_until(rota, job) <= 10, "the task's back-off, jittered"
    assert job.errors[-1].message == "retry requested"


@pytest.mark.parametrize("kind", KINDS)
def test_snooze_gives_the_attempt_back_and_counts_the_snooze(
    rota: Rota, clock: FakeClock, kind: str
) -> None:
    seen: list[tuple[int, int]] = []
    events: list[Any] = []
    rota.on("job.snoozed", events.append)

    def body(ctx: JobContext) -> str:
        seen.append((ctx.attempt, len(seen)))
        if len(seen) <= 3:
            raise Snooze(60)
        return "done"

    job_id = rota.queue(register(rota, kind, body, retries=0))
    for snoozes in (1, 2, 3):
        assert rota.drain().total == 1
        job = rota.job(job_id)
        assert (job.state, job.attempt, job.snoozes, job.errors) == (
            JobState.PENDING,
            0,
            snoozes,
            (),
        ), "not a failure: no attempt spent, no error"
        assert seconds_until(rota, job) == 60.0
        assert rota.drain().total == 0, "not due before its delay"
        clock.advance(60)
    assert rota.drain().succeeded == 1, "retries=0 and still a fourth run: snoozes are free"
    job = rota.job(job_id)
    assert (job.state, job.attempt, job.snoozes, job.result) == (
        JobState.SUCCEEDED,
        1,
        3,
        "done",
    )
    assert [attempt for attempt, _ in seen] == [1, 1, 1, 1]
    assert [(event.job_id, event.fields["delay"]) for event in events] == [(job_id, 60.0)] * 3


def test_snoozing_past_max_snoozes_fails_the_job(make_rota: Callable[..., Rota]) -> None:
    rota = make_rota(max_snoozes=1)

    @rota.task(retries=5)
    def forever(ctx: JobContext) -> None:
        raise Snooze(0)

    @rota.task(retries=5, max_snoozes=3)
    def patient(ctx: JobContext) -> None:
        raise Snooze(0)

    default_id, own_id = rota.queue(forever), rota.queue(patient)
    rota.drain()  # a delay of 0 is due at once, so one drain runs every snooze
    default, own = rota.job(default_id), rota.job(own_id)
    assert (default.state, default.snoozes, default.attempt) == (JobState.FAILED, 1, 1)
    assert (own.state, own.snoozes, own.attempt) == (JobState.FAILED, 3, 1)
    (error,) = own.errors
    assert (error.code, error.attempt) == (ErrorCode.SNOOZE_LIMIT, 1)
    assert "snoozed 3 times" in error.message
    assert rota.retry(own_id) is True
    assert rota.job(own_id).snoozes == 0, "a manual retry gives a fresh snooze budget"


@pytest.mark.parametrize("kind", KINDS)
def test_fail_fails_at_once_with_failed_by_handler(rota: Rota, kind: str) -> None:
    def body(ctx: JobContext) -> None:
        raise Fail("card declined")

    job_id = rota.queue(register(rota, kind, body, retries=5))
    assert rota.drain().failed == 1
    job = rota.job(job_id)
    assert (job.state, job.attempt) == (JobState.FAILED, 1)
    (error,) = job.errors
    assert (error.code, error.type, error.message) == (
        "FAILED_BY_HANDLER",
        "rota.outcomes.Fail",
        "card declined",
    )


@pytest.mark.parametrize("kind", KINDS)
def test_retry_on_retries_only_the_types_it_names(rota: Rota, kind: str) -> None:
    def body(ctx: JobContext) -> None:
        raise (TimeoutError if ctx.job_id % 2 else ValueError)("broke")

    task = register(rota, kind, body, retries=3, retry_on=(OSError,))
    jobs = [rota.queue(task) for _ in range(2)]
    rota.drain()
    states = {rota.job(job_id).state for job_id in jobs}
    assert states == {JobState.PENDING, JobState.FAILED}
    for job_id in jobs:
        job = rota.job(job_id)
        retried = job.errors[-1].type == "builtins.TimeoutError"
        assert job.state is (JobState.PENDING if retried else JobState.FAILED), job


def test_no_retry_on_fails_at_once_and_wins_over_retry_on(rota: Rota) -> None:
    errors = {"missing": FileNotFoundError, "refused": ConnectionError, "lookup": KeyError}

    @rota.task(retries=3, retry_on=(OSError,), no_retry_on=(FileNotFoundError,))
    def both(ctx: JobContext, which: str) -> None:
        raise errors[which](which)

    @rota.task(retries=3, no_retry_on=LookupError)
    def lookup(ctx: JobContext) -> None:
        raise KeyError("gone")

    @rota.task(retries=3, no_retry_on=(ValueError,))
    def other(ctx: JobContext) -> None:
        raise RuntimeError("retried")

    missing, refused = rota.queue(both, "missing"), rota.queue(both, "refused")
    subclass, unlisted = rota.queue(lookup), rota.queue(other)
    rota.drain()
    assert rota.job(missing).state is JobState.FAILED, "no_retry_on wins over retry_on"
    assert rota.job(refused).state is JobState.PENDING, "ConnectionError is an OSError"
    assert rota.job(subclass).state is JobState.FAILED, "KeyError is a LookupError"
    assert rota.job(unlisted).state is JobState.PENDING


def test_a_timeout_is_retried_whatever_retry_on_says(rota: Rota) -> None:
    @rota.task(timeout=0.2, retries=1, retry_on=(KeyError,), no_retry_on=(Exception,))
    async def slow(ctx: JobContext) -> None:
        await asyncio.sleep(30)

    job_id = rota.queue(slow)
    assert rota.drain().retried == 1
    job = rota.job(job_id)
    assert (job.state, job.errors[-1].code) == (JobState.PENDING, "TIMEOUT")


def test_options_and_signals_are_checked(make_rota: Callable[..., Rota]) -> None:
    rota = make_rota()

    def handler(ctx: JobContext) -> None: ...

    for options in (
        {"retry_on": "TimeoutError"},
        {"retry_on": (int,)},
        {"no_retry_on": (ValueError, None)},
        {"max_snoozes": -1},
        {"max_snoozes": 1.5},
    ):
        with pytest.raises(ConfigError):
            rota.task(name="bad", **options)(handler)
    rota.task(name="one_class", retry_on=TimeoutError)(handler)
    assert rota.registry.get("one_class").retry_on == (TimeoutError,)
    with pytest.raises(ConfigError, match="max_snoozes"):
        make_rota(max_snoozes=-1)
    for bad in (-1, math.nan, math.inf, "soon", True):
        with pytest.raises(InvalidArguments):
            Snooze(bad)  # type: ignore[arg-type]
        with pytest.raises(InvalidArguments):
            Retry(bad)  # type: ignore[arg-type]
    assert (Snooze(timedelta(minutes=2)).delay, Retry(1).delay, Retry().delay) == (120.0, 1.0, None)


# -- isolation="process": the signals cross back from the child ----------------------------


def isolated_snooze(ctx: JobContext) -> None:
    raise Snooze(timedelta(seconds=90))


def isolated_outcome(ctx: JobContext, what: str) -> None:
    if what == "retry":
        raise Retry(delay=15)
    if what == "fail":
        raise Fail("no such account")
    if what == "value":
        raise ValueError("bad input")
    raise ConnectionError("flaky")


@pytest.mark.slow
def test_isolated_handlers_signal_their_outcome(rota: Rota, clock: FakeClock) -> None:
    rota.task(isolation="process", retries=2, no_retry_on=(ValueError,))(isolated_outcome)
    rota.task(isolation="process", retries=0)(isolated_snooze)
    ids = {what: rota.queue(isolated_outcome, what) for what in ("retry", "fail", "value", "io")}
    snoozing = rota.queue(isolated_snooze)
    rota.drain()
    jobs = {what: rota.job(job_id) for what, job_id in ids.items()}
    assert (jobs["retry"].state, seconds_until(rota, jobs["retry"])) == (JobState.PENDING, 15.0)
    assert jobs["retry"].errors[-1].type == "rota.outcomes.Retry"
    fail = jobs["fail"].errors[-1]
    assert (jobs["fail"].state, fail.code, fail.message) == (
        JobState.FAILED,
        "FAILED_BY_HANDLER",
        "no such account",
    )
    assert "raise Fail(" in fail.traceback, "the child's traceback is kept"
    value = jobs["value"].errors[-1]
    assert (jobs["value"].state, value.type) == (JobState.FAILED, "builtins.ValueError")
    assert jobs["io"].state is JobState.PENDING, "ConnectionError is not in no_retry_on"
    job = rota.job(snoozing)
    assert (job.state, job.attempt, job.snoozes, seconds_until(rota, job)) == (
        JobState.PENDING,
        0,
        1,
        90.0,
    )
