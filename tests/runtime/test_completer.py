"""The report writer keeps a batch held while it is being written: the heartbeat renews the
lease of a job whose outcome is on its way to the database, so a slow write can never let the
lease lapse and the job be rescued and run again elsewhere.

A write that fails is never repeated as it was: a refused batch is halved, a job that cannot be
written alone is given up (a success with a result then fails with ``INVALID_RESULT``) and the
others are written; an outage gives nothing up.  Real refusals by MariaDB are in
``tests/faults/test_report_sizes.py``.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Callable, Sequence
from datetime import datetime
from types import SimpleNamespace
from typing import Any, cast

import pytest

from rota.core.model import AttemptError, Job, JobState, ProgressReport
from rota.core.transitions import Transition, Verdict, VerdictKind
from rota.errors import TransientStoreError
from rota.observe.events import EventLog
from rota.runtime.announcer import Announcer
from rota.runtime.services.results import Completions
from rota.runtime.timer import Timer
from rota.runtime.worker.completer import Completer
from rota.runtime.worker.executor import Attempt
from rota.runtime.worker.leases import Holdings
from rota.store.base import StatementTooLarge, Store
from rota.store.values import Applied
from rota.testing import FakeClock
from tests.conftest import START


class SlowStore:
    """A job store whose ``complete`` waits until the test lets it finish."""

    def __init__(self) -> None:
        self.writing = threading.Event()
        self.finish = threading.Event()
        self.batches: list[list[int]] = []

    def complete(
        self,
        worker_id: str,
        batch: Sequence[Transition],
        now: datetime,
        progress: Sequence[ProgressReport] = (),
    ) -> Applied:
        self.writing.set()
        self.finish.wait(10)
        self.batches.append([transition.job_id for transition in batch])
        return Applied(frozenset(t.job_id for t in batch))


def test_a_batch_being_written_stays_held_until_it_is_written() -> None:
    store = SlowStore()

    async def scenario() -> list[list[int]]:
        reports = writer(store)
        reports.add(attempt(success(7), job(7)))
        seen = [reports.held()]
        flushing = asyncio.ensure_future(reports.flush())
        await asyncio.to_thread(store.writing.wait, 10)
        reports.add(attempt(success(8), job(8)))
        seen.append(sorted(reports.held()))
        store.finish.set()
        await flushing
        seen.append(reports.held())
        return seen

    held: Any = asyncio.run(scenario())
    assert held == [[7], [7, 8], []]
    assert store.batches == [[7], [8]], "8 came during 7's write: the next batch"


def writer(jobs: object) -> Completer:
    """A completer over a store whose ``store.jobs`` is ``jobs``, a fake that writes batches."""
    clock = FakeClock(START)
    announcer = Announcer(EventLog(), None, Completions())
    db = asyncio.to_thread
    store = cast(Store, SimpleNamespace(jobs=jobs))
    return Completer("w", store, db, clock, Timer(clock), 1.0, announcer, Holdings())


def attempt(transition: Transition, of: Job) -> Attempt:
    """The attempt that ended ``of`` with ``transition``."""
    kind = VerdictKind.SUCCEEDED if transition.target is JobState.SUCCEEDED else VerdictKind.FAILED
    return Attempt(of, Verdict(kind, result=transition.result), transition, 0.0)


def job(job_id: int, errors: tuple[AttemptError, ...] = ()) -> Job:
    return Job(
        id=job_id,
        task="t",
        queue="default",
        args=(),
        kwargs={},
        state=JobState.RUNNING,
        attempt=len(errors) + 1,
        max_attempts=5,
        priority=0,
        run_at=START,
        created_at=START,
        errors=errors,
    )


def success(job_id: int, result: str | None = '"done"', attempt: int = 1) -> Transition:
    return Transition(job_id, JobState.RUNNING, JobState.SUCCEEDED, attempt, START, result=result)


def failure(job_id: int) -> Transition:
    error = AttemptError(1, START, "EXECUTION_FAILED", "builtins.ValueError", "boom")
    return Transition(job_id, JobState.RUNNING, JobState.FAILED, 1, START, errors=(error,))


class RefusingStore:
    """A job store whose ``complete`` fails with what ``refuse`` gives for a batch (``None``: it
    writes it), and whose database takes a heartbeat while ``answers``."""

    def __init__(self, refuse: Callable[[Sequence[Transition]], Exception | None]) -> None:
        self.refuse = refuse
        self.answers = True
        self.tries = 0
        self.written: list[list[Transition]] = []

    def complete(
        self,
        worker_id: str,
        batch: Sequence[Transition],
        now: datetime,
        progress: Sequence[ProgressReport] = (),
    ) -> Applied:
        self.tries += 1
        refused = self.refuse(batch)
        if refused is not None:
            raise refused
        self.written.append(list(batch))
        return Applied(frozenset(t.job_id for t in batch))

    def heartbeat(
        self, worker_id: str, job_ids: Sequence[int], now: datetime, lease_until: datetime
    ) -> tuple[set[int], set[int]]:
        if not self.answers:
            raise TransientStoreError("cannot execute UPDATE in a read-only transaction")
        return set(), set()

    def outcomes(self) -> dict[int, Transition]:
        return {t.job_id: t for batch in self.written for t in batch}


def flush(store: RefusingStore, transitions: Sequence[Transition], *jobs: Job) -> Completer:
    reports = writer(store)
    known = {given.id: given for given in jobs}
    for transition in transitions:
        reports.add(attempt(transition, known.get(transition.job_id) or job(transition.job_id)))
    asyncio.run(reports.flush())
    return reports


def test_a_refused_batch_is_halved_until_it_passes() -> None:
    def refuse(batch: Sequence[Transition]) -> Exception | None:
        return (
            StatementTooLarge("Got a packet bigger than 'max_allowed_packet'")
            if len(batch) > 3
            else None
        )

    store = RefusingStore(refuse)
    reports = flush(store, [success(n) for n in range(1, 11)])
    assert [[t.job_id for t in batch] for batch in store.written] == [
        [1, 2, 3],
        [4, 5, 6],
        [7, 8],
        [9, 10],
    ], "in order, halved after each refusal, doubled after each write"
    assert store.tries == 8 and reports.pending == [] and reports.held() == []


def test_a_result_no_statement_can_carry_fails_its_job_and_the_others_are_written(
    caplog: pytest.LogCaptureFixture,
) -> None:
    def refuse(batch: Sequence[Transition]) -> Exception | None:
        large = [t.job_id for t in batch if t.result and len(t.result) > 100]
        return StatementTooLarge("larger than any statement", job_ids=large) if large else None

    earlier = AttemptError(1, START, "TIMEOUT", "rota.errors.JobTimeout", "slow")
    store = RefusingStore(refuse)
    with caplog.at_level(logging.ERROR, logger="rota.worker"):
        flush(
            store,
            [success(1), success(2, '"' + "é" * 200 + '"', attempt=2), success(3)],
            job(2, (earlier,)),
        )
    outcomes = store.outcomes()
    assert {n: outcomes[n].target for n in outcomes} == {
        1: JobState.SUCCEEDED,
        2: JobState.FAILED,
        3: JobState.SUCCEEDED,
    }
    failed = outcomes[2]
    assert failed.errors is not None and failed.errors[0] == earlier, "earlier errors are kept"
    error = failed.new_error
    assert error is not None
    assert (error.code, error.type, error.attempt) == (
        "INVALID_RESULT",
        "rota.errors.InvalidResult",
        2,
    )
    assert "402 bytes as JSON" in error.message and "larger than any statement" in error.message
    assert [
        getattr(r, "job_id", None)
        for r in caplog.records
        if getattr(r, "event", None) == "worker.result_unwritable"
    ] == [2]


def test_a_job_whose_write_alone_loses_the_connection_is_given_up_after_strikes(
    caplog: pytest.LogCaptureFixture,
) -> None:
    def refuse(batch: Sequence[Transition]) -> Exception | None:
        poison = any((t.job_id == 2 and t.result) or t.job_id == 4 for t in batch)
        return TransientStoreError("Lost connection to server during query") if poison else None

    store = RefusingStore(refuse)
    with caplog.at_level(logging.ERROR, logger="rota.worker"):
        reports = flush(store, [success(1), success(2), success(3), failure(4), success(5)])
    outcomes = store.outcomes()
    assert {n: outcomes[n].target for n in outcomes} == {
        1: JobState.SUCCEEDED,
        2: JobState.FAILED,
        3: JobState.SUCCEEDED,
        5: JobState.SUCCEEDED,
    }, "4's failure is given up: its lease expires and a rescue retries it"
    assert reports.pending == [] and reports.held() == []
    events = [(getattr(r, "event", None), getattr(r, "job_id", None)) for r in caplog.records]
    assert events == [
        ("worker.result_unwritable", 2),
        ("job.failed", 2),  # written so, and announced once written
        ("worker.report_dropped", 4),
    ]
    assert store.tries <= 20


def test_an_outage_gives_nothing_up() -> None:
    store = RefusingStore(lambda batch: TransientStoreError("Can't connect to server"))
    store.answers = False
    reports = writer(store)
    transitions = [success(n) for n in range(1, 9)]
    for transition in transitions:
        reports.add(attempt(transition, job(transition.job_id)))

    async def outage() -> None:
        for _ in range(6):
            with pytest.raises(TransientStoreError):
                await reports.flush()

    asyncio.run(outage())
    assert reports.pending == transitions, "nothing given up, nothing reordered"
    store.refuse = lambda batch: None
    store.answers = True
    asyncio.run(reports.flush())
    assert [t for batch in store.written for t in batch] == transitions
