"""Signals and waits on every backend, in virtual time (DESIGN.md, "Durable workflows"):
``ctx.wait_for`` returns the first untaken signal of its name, sent before the wait or after;
with none there yet the job parks ``waiting``, holding no worker and spending no attempt, until
a signal wakes it or its timeout passes (``wait_for`` then returns ``None``); ``rota.signal``
addresses a job by id or by unique key and says ``False`` for no live job; concurrent signals
wake the job once; a waiting job is cancelled at once. Sync and async handlers alike."""

from __future__ import annotations

import asyncio
import threading
from collections import Counter
from collections.abc import Callable
from datetime import timedelta
from typing import Any

import pytest

from rota import InvalidArguments, JobContext, JobState, Rota
from rota.testing import FakeClock

KINDS = ["sync", "async"]
HOUR = timedelta(hours=1)


def waiting_task(
    rota: Rota, kind: str, signal: str = "approved", timeout: Any = None, **options: Any
) -> tuple[str, Counter[str], list[Any]]:
    """The task ``approve``: a step, then ``wait_for(signal, timeout)``, then another step;
    counts what ran, and lists what each wait returned."""
    ran: Counter[str] = Counter()
    got: list[Any] = []

    def before() -> None:
        ran["before"] += 1

    if kind == "sync":

        def approve(ctx: JobContext) -> Any:
            ctx.step("before", before)
            got.append(ctx.wait_for(signal, timeout=timeout))
            ran["after"] += 1
            return got[-1]

        rota.task(**options)(approve)
    else:

        async def aapprove(ctx: JobContext) -> Any:
            await ctx.step("before", before)
            got.append(await ctx.wait_for(signal, timeout=timeout))
            ran["after"] += 1
            return got[-1]

        rota.task(name="approve", **options)(aapprove)
    return "approve", ran, got


@pytest.mark.parametrize("kind", KINDS)
def test_a_wait_parks_the_job_until_its_signal_arrives(rota: Rota, kind: str) -> None:
    task, ran, got = waiting_task(rota, kind)
    heard: list[Any] = []
    rota.on("job.waiting", heard.append)
    job_id = rota.queue(task)
    assert rota.drain().total == 1
    job = rota.job(job_id)
    assert (job.state, job.attempt, job.waiting_for, job.lease_owner) == (
        JobState.WAITING,
        0,
        "approved",
        None,
    )
    assert [event.fields["signal"] for event in heard] == ["approved"]
    assert rota.counts().by_state["waiting"] == 1
    assert rota.drain().total == 0, "a waiting job is not claimed"
    assert rota.signal(job_id, "other") is True, "kept for a wait of that name; no wake-up"
    assert rota.drain().total == 0
    assert rota.signal(job_id, "approved", {"by": "ops"}) is True
    assert rota.job(job_id).state is JobState.PENDING
    assert rota.drain().total == 1
    job = rota.job(job_id)
    assert (job.state, job.attempt, rota.result(job_id)) == (JobState.SUCCEEDED, 1, {"by": "ops"})
    assert ran == {"before": 1, "after": 1}
    assert got == [{"by": "ops"}]
    assert [(s.name, s.result) for s in rota.steps(job_id)] == [
        ("before", None),
        ("wait_for:approved", {"by": "ops"}),
    ]


@pytest.mark.parametrize("kind", KINDS)
def test_a_signal_sent_before_the_wait_is_kept_for_it(rota: Rota, kind: str) -> None:
    task, ran, got = waiting_task(rota, kind)
    job_id = rota.queue(task)
    assert rota.signal(job_id, "approved", 1)
    assert rota.signal(job_id, "approved", 2)
    rota.drain()
    assert (rota.job(job_id).state, got) == (JobState.SUCCEEDED, [1])
    assert ran["after"] == 1


@pytest.mark.parametrize("kind", KINDS)
def test_a_wait_times_out_and_returns_none(rota: Rota, clock: FakeClock, kind: str) -> None:
    task, ran, got = waiting_task(rota, kind, timeout=HOUR)
    job_id = rota.queue(task)
    start = clock.now()
    rota.drain()
    job = rota.job(job_id)
    assert (job.state, job.run_at) == (JobState.WAITING, start + HOUR)
    clock.advance(HOUR - timedelta(seconds=1))
    assert rota.store.workflow.wake_timed_out(clock.now(), 100) == 0
    clock.advance(1)
    assert rota.store.workflow.wake_timed_out(clock.now(), 100) == 1
    rota.drain()
    assert (rota.job(job_id).state, got, ran["before"]) == (JobState.SUCCEEDED, [None], 1)
    assert rota.signal(job_id, "approved") is False, "a finished job takes no signal"


@pytest.mark.parametrize("kind", KINDS)
def test_two_waits_for_one_signal_each_take_their_own(
    rota: Rota, clock: FakeClock, kind: str
) -> None:
    got: list[Any] = []
    if kind == "sync":

        def twice(ctx: JobContext) -> None:
            got.append(ctx.wait_for("next", timeout=60))
            got.append(ctx.wait_for("next", timeout=60))

        rota.task(twice)
    else:

        async def atwice(ctx: JobContext) -> None:
            got.append(await ctx.wait_for("next", timeout=60))
            got.append(await ctx.wait_for("next", timeout=60))

        rota.task(name="twice")(atwice)
    job_id = rota.queue("twice")
    rota.drain()
    clock.advance(60)
    rota.store.workflow.wake_timed_out(clock.now(), 100)
    rota.drain()
    job = rota.job(job_id)
    assert (job.state, got) == (JobState.WAITING, [None]), "the second wait is a new one"
    assert rota.signal(job_id, "next", "go")
    rota.drain()
    assert (rota.job(job_id).state, got) == (JobState.SUCCEEDED, [None, None, "go"])


def test_signals_address_a_job_by_its_unique_key(rota: Rota) -> None:
    task, _, got = waiting_task(rota, "sync")
    job_id = rota.queue(task, unique_key="order-1234")
    rota.drain()
    assert rota.signal("order-1234", "approved", "yes") is True
    assert rota.signal("order-9999", "approved") is False
    assert rota.signal("order-1234", "approved", task="unknown-task") is False
    rota.drain()
    assert (rota.job(job_id).state, got) == (JobState.SUCCEEDED, ["yes"])


def test_signals_to_unknown_jobs_are_false_and_bad_ones_refused(rota: Rota) -> None:
    assert rota.signal(424242, "approved") is False
    with pytest.raises(InvalidArguments, match="not JSON"):
        rota.signal(1, "approved", {1, 2})
    with pytest.raises(InvalidArguments, match="signal"):
        rota.signal(1, "")
    with pytest.raises(InvalidArguments, match="job id"):
        rota.signal(1.5, "approved")  # type: ignore[arg-type]
    bare = Rota(rota.config.url, table_prefix=rota.config.table_prefix)
    with pytest.raises(InvalidArguments, match="needs task="):
        bare.signal("order-1", "approved")


@pytest.mark.parametrize("kind", ["async"])
def test_concurrent_signals_wake_the_job_once(make_rota: Callable[..., Rota], kind: str) -> None:
    rota = make_rota()
    task, _, got = waiting_task(rota, kind)
    job_id = rota.queue(task)
    rota.drain()
    senders = [make_rota() for _ in range(4)]
    barrier = threading.Barrier(len(senders))
    answers: list[bool] = []

    def send(sender: Rota, n: int) -> None:
        barrier.wait()
        answers.append(sender.signal(job_id, "approved", n))

    threads = [threading.Thread(target=send, args=(s, n)) for n, s in enumerate(senders)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert answers == [True] * 4
    assert rota.drain().total == 1, "one wake-up, one run"
    assert rota.job(job_id).state is JobState.SUCCEEDED
    assert len(got) == 1 and got[0] in range(4)


def test_a_waiting_job_is_cancelled_at_once(rota: Rota) -> None:
    task, _, _ = waiting_task(rota, "sync")
    job_id = rota.queue(task)
    rota.drain()
    assert rota.cancel(job_id) is True
    job = rota.job(job_id)
    assert (job.state, job.waiting_for) == (JobState.CANCELLED, None)
    assert rota.signal(job_id, "approved") is False


def test_a_signal_racing_the_park_is_never_lost(rota: Rota) -> None:
    """The signal is sent while the handler runs, after its wait looked at the mailbox and
    found nothing: the park finds it and leaves the job pending, not waiting for ever."""
    sent: list[bool] = []

    def racing(ctx: JobContext) -> Any:
        if not sent:
            sent.append(True)
            # Another process signals between the wait's look and the park.
            original = ctx.workflow
            assert original is not None
            value = ctx.wait_for("approved")
            return value
        return ctx.wait_for("approved")

    rota.task(racing)
    job_id = rota.queue("racing")
    store = rota.store.workflow
    take = store.take

    def take_then_signal(*args: Any) -> Any:
        taken = take(*args)
        asyncio.run(asyncio.to_thread(rota.signal, job_id, "approved", "late"))
        return taken

    rota.store.workflow.take = take_then_signal  # type: ignore[method-assign,assignment]
    try:
        rota.drain()
    finally:
        del rota.store.workflow.take
    job = rota.job(job_id)
    assert job.state is not JobState.WAITING
    rota.drain()
    assert (rota.job(job_id).state, rota.result(job_id)) == (JobState.SUCCEEDED, "late")


def test_a_cancel_asked_while_the_attempt_ran_ends_the_wait_cancelled(rota: Rota) -> None:
    heard: list[str] = []
    rota.on("*", lambda event: heard.append(event.name.value))

    def approve(ctx: JobContext) -> Any:
        assert rota.cancel(ctx.job_id), "asked to stop at its next heartbeat"
        return ctx.wait_for("approved")

    rota.task(approve)
    job_id = rota.queue("approve")
    rota.drain()
    job = rota.job(job_id)
    assert (job.state, job.waiting_for, job.cancel_requested) == (JobState.CANCELLED, None, False)
    assert "job.cancelled" in heard and "job.waiting" not in heard
    assert rota.signal(job_id, "approved") is False


def test_a_passed_deadline_is_found_by_one_seek_and_a_stale_one_wakes_nothing(
    rota: Rota, clock: FakeClock
) -> None:
    task, _, got = waiting_task(rota, "sync", timeout=60)
    timing_out, signalled = rota.queue(task), rota.queue(task)
    rota.drain()
    assert rota.signal(signalled, "approved", "early")
    rota.drain()
    assert rota.job(signalled).state is JobState.SUCCEEDED
    store = rota.store
    assert not store.outlook([], [], clock.now()).leases_expired, "nothing has timed out yet"
    clock.advance(60)
    assert store.outlook([], [], clock.now()).leases_expired, "the rescue has work"
    assert store.workflow.wake_timed_out(clock.now(), 100) == 1, "the stale deadline woke nothing"
    assert rota.job(timing_out).state is JobState.PENDING
    assert not store.outlook([], [], clock.now()).leases_expired, "both deadlines are gone"
    rota.drain()
    assert got == ["early", None]
