"""Events announce committed facts (DESIGN, "Events and hooks").

A hook that reads the job sees the state its event names, whichever path moved the job: an
attempt's outcome, a retry, a cancel through the API, a cascade of cancellations, a manual
retry, a rescue after an expired lease.  An outcome decided but never written (its connection
cut between the decision and the commit, its lease expired meanwhile) is never announced.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from datetime import timedelta

import pytest

from rota import JobContext, JobState, Rota
from rota.errors import TransientStoreError
from rota.observe.events import Event
from rota.testing import FakeClock
from tests.helpers import wait_until

NAMED = {
    "job.succeeded": JobState.SUCCEEDED,
    "job.failed": JobState.FAILED,
    "job.retrying": JobState.PENDING,
    "job.cancelled": JobState.CANCELLED,
    "job.retried": JobState.PENDING,
}


class Heard:
    """What hooks heard, with the job's state as each hook read it from the database."""

    def __init__(self, rota: Rota) -> None:
        self.rota = rota
        self.lock = threading.Lock()
        self.events: list[tuple[str, int, JobState]] = []

    def __call__(self, event: Event) -> None:
        assert event.job_id is not None
        state = self.rota.job(event.job_id).state
        with self.lock:
            self.events.append((event.name, event.job_id, state))

    def of(self, job_id: int) -> list[tuple[str, JobState]]:
        with self.lock:
            return [(name, state) for name, heard, state in self.events if heard == job_id]


def listening(rota: Rota) -> Heard:
    heard = Heard(rota)
    for name in NAMED:
        rota.on(name, heard)
    return heard


def test_a_hook_reads_the_state_its_event_names(
    make_rota: Callable[..., Rota], clock: FakeClock
) -> None:
    """The retry is due only once the clock is moved on: due at once, the drain that failed
    the attempt would also claim the retry, and the ``job.retrying`` hook's read would race
    with that claim."""
    rota = make_rota()
    heard = listening(rota)

    @rota.task(retries=1, retry_delay=60)
    def flaky(ctx: JobContext) -> None:
        if ctx.attempt == 1:
            raise ValueError("once")

    @rota.task(retries=0)
    def broken(ctx: JobContext) -> None:
        raise ValueError("always")

    @rota.task
    def fine(ctx: JobContext) -> int:
        return 7

    retried = rota.queue(flaky)
    failed = rota.queue(broken)
    dependent = rota.queue(fine, depends_on=[failed])
    cancelled = rota.queue(fine, delay=60)
    assert rota.cancel(cancelled)
    assert rota.drain().failed == 1
    clock.advance(60)
    rota.drain()  # the retry of flaky, due now
    assert rota.retry(failed)
    ended = [retried, failed, dependent, cancelled]
    wait_until(lambda: all(heard.of(job_id) for job_id in ended))
    wait_until(lambda: len(heard.of(failed)) == 2)  # failed, then retried by hand

    for name, job_id, state in heard.events:
        assert state is NAMED[name], f"{name} of job {job_id} read {state.value}"
    assert heard.of(retried) == [
        ("job.retrying", JobState.PENDING),
        ("job.succeeded", JobState.SUCCEEDED),
    ]
    assert heard.of(failed) == [("job.failed", JobState.FAILED), ("job.retried", JobState.PENDING)]
    assert heard.of(dependent) == [("job.cancelled", JobState.CANCELLED)], "the cascade"
    assert heard.of(cancelled) == [("job.cancelled", JobState.CANCELLED)], "cancel by the API"


def test_an_outcome_cut_off_before_its_commit_is_never_announced(
    make_rota: Callable[..., Rota], clock: FakeClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The database goes away between the handler's return and the write of its success; the
    lease runs out and another process's rescue fails the job, which is what is announced."""
    worker, rescuer = make_rota(lease_seconds=30), make_rota(lease_seconds=30)
    charged: list[int] = []
    for rota in (worker, rescuer):

        @rota.task(name="charge", retries=0)
        def charge(ctx: JobContext) -> str:
            charged.append(ctx.job_id)
            return "charged"

    heard_by_worker, heard_by_rescuer = listening(worker), listening(rescuer)
    job_id = worker.queue("charge")
    cut = TransientStoreError("Lost connection to server during query")

    def unreachable(*args: object, **kwargs: object) -> object:
        raise cut

    store = worker.store
    for part, method in (
        (store.jobs, "complete"),
        (store.jobs, "heartbeat"),
        (store.reads, "job_state"),
    ):
        monkeypatch.setattr(part, method, unreachable)
    with pytest.raises(TransientStoreError):
        worker.drain()
    assert charged == [job_id], "the handler ran and its success was decided"
    monkeypatch.undo()

    clock.advance(timedelta(seconds=31))
    rescuer.drain()
    wait_until(lambda: ("job.failed", JobState.FAILED) in heard_by_rescuer.of(job_id))
    job = rescuer.job(job_id)
    assert job.state is JobState.FAILED and job.errors[-1].code == "LEASE_EXPIRED"
    assert heard_by_worker.of(job_id) == [], "nothing was committed by the worker"
    assert heard_by_rescuer.of(job_id) == [("job.failed", JobState.FAILED)]
