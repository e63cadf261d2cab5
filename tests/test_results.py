"""Handlers' results on every backend: stored on the job, awaited by ``rota.result``.

A JSON-serialisable return value is kept as ``Job.result``; one that is not JSON or is larger
than ``max_result_bytes`` fails the attempt with ``INVALID_RESULT``, not retried.
``rota.result`` / ``aresult`` wait until the job is final, back off while they poll, and are
woken at once when this process's worker ends the job (counted store reads, in virtual time:
the clock never moves, so only the wake-up can bring the second read).
"""

from __future__ import annotations

import asyncio
import json
import re
import threading
import warnings
from collections.abc import Callable
from datetime import datetime, timedelta
from functools import partial
from typing import Any

import pytest
from click.testing import CliRunner
from sqlalchemy import event

from rota import (
    InvalidArguments,
    JobCancelled,
    JobContext,
    JobFailed,
    JobNotFound,
    JobState,
    ResultTimeout,
    Rota,
)
from rota.cli import main
from rota.core.model import Job
from rota.testing import VirtualClock
from tests.conftest import START, Database
from tests.helpers import eventually, sql_store

VALUES: dict[str, Any] = {
    "dict": {"sent": 3, "ids": [1, 2, 3], "nested": {"ok": True, "none": None}},
    "list": [1, "two", 3.5, False, None],
    "str": "plain text",
    "unicode": "naïve café \u2013 東京 🎉",
    "none": None,
    "int": 0,
    "empty": "",
}


def count_reads(rota: Rota, clock: VirtualClock | None = None) -> list[datetime | None]:
    """Record each read of a job's state through the store (the waiter's poll) and when."""
    reads: list[datetime | None] = []
    read = rota.store.reads.job_state

    def counted(job_id: int) -> JobState | None:
        moment = clock.now() if clock else None
        found = read(job_id)
        reads.append(moment)  # once read: a test waiting for it knows the read is over
        return found

    rota.store.reads.job_state = counted  # type: ignore[method-assign]
    return reads


def test_results_round_trip(rota: Rota) -> None:
    @rota.task
    def give(ctx: JobContext, name: str) -> Any:
        return VALUES[name]

    @rota.task
    async def agive(ctx: JobContext, name: str) -> Any:
        return VALUES[name]

    ids = {(task, name): rota.queue(task, name) for task in (give, agive) for name in VALUES}
    assert rota.drain().succeeded == len(ids)
    for (_, name), job_id in ids.items():
        job = rota.job(job_id)
        assert (job.state, job.result) == (JobState.SUCCEEDED, VALUES[name]), name
        assert rota.result(job_id) == VALUES[name]


def test_result_raises_the_documented_errors(rota: Rota) -> None:
    @rota.task(retries=0)
    def boom(ctx: JobContext) -> None:
        raise LookupError("no such row")

    @rota.task
    def never(ctx: JobContext) -> None: ...

    failed, cancelled = rota.queue(boom), rota.queue(never, delay=3600)
    waiting = rota.queue(never, delay=3600)
    rota.drain()
    assert rota.cancel(cancelled) is True
    with pytest.raises(JobFailed, match="no such row") as raised:
        rota.result(failed)
    assert raised.value.code == "JOB_FAILED"
    assert raised.value.error is not None
    assert (raised.value.error.code, raised.value.error.message) == (
        "EXECUTION_FAILED",
        "no such row",
    )
    with pytest.raises(JobCancelled) as stopped:
        rota.result(cancelled, timeout=5)
    assert stopped.value.code == "JOB_CANCELLED"
    with pytest.raises(ResultTimeout) as late:
        rota.result(waiting, timeout=0.2)
    assert late.value.code == "RESULT_TIMEOUT"
    with pytest.raises(ResultTimeout):
        rota.result(waiting, timeout=timedelta(0))
    with pytest.raises(JobNotFound):
        rota.result(waiting + 1000)
    for bad in (-1, float("nan"), "soon"):
        with pytest.raises(InvalidArguments):
            rota.result(waiting, timeout=bad)  # type: ignore[arg-type]
    with pytest.raises(InvalidArguments):
        rota.result("1")  # type: ignore[arg-type]


def test_result_in_async_code_is_aresult(rota: Rota) -> None:
    @rota.task
    def seven(ctx: JobContext) -> int:
        return 7

    job_id = rota.queue(seven)
    rota.drain()

    async def scenario() -> None:
        assert await rota.aresult(job_id) == 7
        with pytest.raises(InvalidArguments, match="aresult"):
            rota.result(job_id)

    asyncio.run(scenario())


class Opaque:
    pass


BAD_RESULTS: dict[str, Callable[[], Any]] = {
    "set": lambda: {1, 2},
    "object": Opaque,
    "nan": lambda: float("nan"),
    "big": lambda: "x" * 2_000,
    "wide": lambda: "\U0001f600" * 300,  # 302 characters as JSON, but 1,202 bytes
    "deep": lambda: _nested(150),
    "surrogate": lambda: "\ud800",
}


def _nested(depth: int) -> Any:
    value: Any = []
    for _ in range(depth):
        value = [value]
    return value


@pytest.mark.parametrize("kind", ["sync", "async"])
def test_a_result_that_cannot_be_kept_fails_the_attempt_without_retry(
    make_rota: Callable[..., Rota], kind: str
) -> None:
    rota = make_rota(max_result_bytes=1_000)

    if kind == "sync":

        @rota.task(retries=3)
        def bad(ctx: JobContext, name: str) -> Any:
            return BAD_RESULTS[name]()

    else:

        @rota.task(retries=3)
        async def bad(ctx: JobContext, name: str) -> Any:
            return BAD_RESULTS[name]()

    ids = {name: rota.queue(bad, name) for name in BAD_RESULTS}
    assert rota.drain().failed == len(ids)
    for name, job_id in ids.items():
        job = rota.job(job_id)
        assert (job.state, job.attempt, job.result) == (JobState.FAILED, 1, None), name
        (error,) = job.errors
        assert (error.code, error.type) == ("INVALID_RESULT", "rota.errors.InvalidResult"), name
    assert "over the 1000 limit" in rota.job(ids["big"]).errors[0].message
    assert "1202 bytes as JSON" in rota.job(ids["wide"]).errors[0].message
    assert "set" in rota.job(ids["set"]).errors[0].message
    with pytest.raises(JobFailed) as raised:
        rota.result(ids["object"])
    assert raised.value.error is not None and raised.value.error.code == "INVALID_RESULT"


def isolated_result(ctx: JobContext, what: str) -> Any:
    return {"unicode": "東京 🎉", "n": 3} if what == "good" else {"a", "set"}


@pytest.mark.slow
def test_isolated_results_cross_back_from_the_child(rota: Rota) -> None:
    rota.task(isolation="process", retries=2)(isolated_result)
    good, bad = rota.queue(isolated_result, "good"), rota.queue(isolated_result, "bad")
    rota.drain()
    assert rota.result(good) == {"unicode": "東京 🎉", "n": 3}
    job = rota.job(bad)
    assert (job.state, job.attempt, job.errors[-1].code) == (JobState.FAILED, 1, "INVALID_RESULT")


def test_a_local_completion_wakes_the_waiter_at_once(make_rota: Callable[..., Rota]) -> None:
    clock = VirtualClock(START)
    rota = make_rota(clock=clock, poll_interval=1.0)
    release = threading.Event()

    @rota.task
    def slow(ctx: JobContext) -> dict[str, bool]:
        release.wait(10)
        return {"ok": True}

    async def scenario() -> None:
        async with rota:
            job_id = rota.queue(slow)
            reads = count_reads(rota, clock)
            waiter = asyncio.ensure_future(rota.aresult(job_id))
            await eventually(lambda: len(reads) == 1)
            release.set()
            assert await asyncio.wait_for(waiter, 10) == {"ok": True}
            assert len(reads) == 2, "one read, then one more when woken; the clock never moved"

    asyncio.run(scenario())


def polled(waiter: asyncio.Future[Any], reads: list[Any], seen: int, clock: VirtualClock) -> bool:
    """The waiter ended, or read once more and sleeps again (its poll beside its timeout)."""
    return waiter.done() or (len(reads) > seen and len(clock.deadlines()) >= 2)


def test_a_waiter_backs_off_while_it_polls(make_rota: Callable[..., Rota]) -> None:
    clock = VirtualClock(START)
    rota = make_rota(clock=clock, poll_interval=1.0)

    @rota.task
    def idle(ctx: JobContext) -> None: ...

    job_id = rota.queue(idle)  # no worker runs: it stays pending
    reads = count_reads(rota, clock)

    async def scenario() -> None:
        waiter = asyncio.ensure_future(rota.aresult(job_id, timeout=10))
        seen = 0
        while True:
            await eventually(partial(polled, waiter, reads, seen, clock))
            if waiter.done():
                break
            seen = len(reads)
            clock.set(clock.deadlines()[0])
        with pytest.raises(ResultTimeout):
            waiter.result()

    asyncio.run(scenario())
    offsets = [round((moment - START).total_seconds(), 3) for moment in reads if moment]
    polls = [0.0, 0.05, 0.15, 0.35, 0.75, *(1.55 + n for n in range(9)), 10.0]
    assert offsets == polls, "50 ms doubling up to the poll interval, then the timeout"


def test_a_waiter_polls_the_state_alone_and_reads_the_whole_job_once(
    make_rota: Callable[..., Rota],
) -> None:
    """Twenty waiters on a job of a mebibyte must not read a mebibyte each at every poll."""
    clock = VirtualClock(START)
    rota = make_rota(clock=clock, poll_interval=1.0)
    large = "é" * 100_000

    @rota.task
    def echo(ctx: JobContext, text: str) -> str:
        return text

    job_id = rota.queue(echo, large)
    jobs_table = sql_store(rota).schema.jobs.name
    polls: list[str] = []

    def record(
        conn: Any, cursor: Any, statement: str, parameters: Any, context: Any, many: bool
    ) -> None:
        if statement.lstrip().upper().startswith("SELECT") and jobs_table in statement:
            polls.append(statement)

    full_reads: list[int] = []
    read = rota.store.reads.job

    def counted(job_id: int) -> Job | None:
        full_reads.append(job_id)
        return read(job_id)

    def sleeping_after(read: int) -> bool:
        return len(polls) >= read and len(clock.deadlines()) >= 1

    async def scenario() -> Any:
        waiter = asyncio.ensure_future(rota.aresult(job_id))
        for read in (1, 2, 3):
            await eventually(partial(sleeping_after, read))
            clock.set(clock.deadlines()[0])
        await eventually(partial(sleeping_after, 4))
        polled = list(polls)
        assert not waiter.done()
        assert (await rota.adrain()).succeeded == 1
        return polled, await asyncio.wait_for(waiter, 10)

    engine = sql_store(rota).engine
    rota.store.reads.job = counted  # type: ignore[method-assign]
    event.listen(engine, "before_cursor_execute", record)
    try:
        polled, result = asyncio.run(scenario())
    finally:
        event.remove(engine, "before_cursor_execute", record)
    assert len(polled) == 4
    for statement in polled:
        assert not re.search(r"\b(payload|result|errors)\b", statement), statement
    assert result == large
    assert full_reads == [job_id], "the whole job is read once, when it is final"


def test_the_result_is_shown_by_rota_job_and_the_dashboard(rota: Rota, db: Database) -> None:
    @rota.task
    def report(ctx: JobContext) -> dict[str, str]:
        return {"city": "東京", "html": "<b>bold</b>"}

    job_id = rota.queue(report)
    rota.drain()
    args = ["job", str(job_id), "--url", db.url, "--table-prefix", db.prefix]
    shown = CliRunner().invoke(main, args)
    assert shown.exit_code == 0, shown.output
    assert 'result\n  {"city": "東京", "html": "<b>bold</b>"}' in shown.stdout
    as_json = CliRunner().invoke(main, [*args, "--json"])
    assert json.loads(as_json.stdout)["result"] == {"city": "東京", "html": "<b>bold</b>"}
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*install `httpx2`", category=Warning)
        from starlette.testclient import TestClient

        from rota.dashboard import create_app

        page = TestClient(create_app(rota), base_url="http://localhost").get(f"/jobs/{job_id}")
    assert page.status_code == 200
    assert "<h2>Result</h2>" in page.text
    assert "東京" in page.text and "&lt;b&gt;bold&lt;/b&gt;" in page.text
