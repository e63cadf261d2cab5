"""Durable workflow steps and sleeps on every backend, in virtual time (DESIGN.md, "Durable
workflows"): a step runs once per job and a later attempt or resume gets its saved result
without running it; names repeat by occurrence; a step that raises fails the attempt, which
retries without re-running the finished steps; a sleep parks the job with no attempt spent and
resumes it when it ends; a step finished after the lease was lost saves nothing; steps are
listed by ``rota.steps`` and pruned with their job. Sync and async handlers alike."""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Awaitable, Callable, Coroutine
from datetime import timedelta
from typing import Any

import pytest
from sqlalchemy import func, select, update

from rota import ConfigError, JobContext, JobNotFound, JobState, Rota
from rota.errors import ErrorCode
from rota.testing import FakeClock
from tests.helpers import sql_store

KINDS = ["sync", "async"]
WEEK = timedelta(days=7)
Call = Callable[..., Awaitable[Any]]
Body = Callable[[JobContext, Call, Call], Coroutine[Any, Any, Any]]


def workflow(rota: Rota, kind: str, body: Body, **options: Any) -> str:
    """``body(ctx, step, sleep)`` as the task ``flow``, its handler sync or async. The body is
    written once, awaiting ``step`` and ``sleep``: in the sync handler they are the context's
    own blocking calls (in the handler's thread), in the async one its awaitables."""
    if kind == "sync":

        def flow(ctx: JobContext) -> Any:
            async def step(name: str, fn: Callable[..., Any], *args: Any) -> Any:
                return ctx.step(name, fn, *args)

            async def sleep(name: str, duration: Any) -> Any:
                return ctx.sleep(name, duration)

            return asyncio.run(body(ctx, step, sleep))

        rota.task(name="flow", **options)(flow)
    else:

        async def aflow(ctx: JobContext) -> Any:
            async def step(name: str, fn: Callable[..., Any], *args: Any) -> Any:
                return await ctx.step(name, fn, *args)

            async def sleep(name: str, duration: Any) -> Any:
                return await ctx.sleep(name, duration)

            return await body(ctx, step, sleep)

        rota.task(name="flow", **options)(aflow)
    return "flow"


@pytest.mark.parametrize("kind", KINDS)
def test_a_retry_replays_finished_steps_without_running_them(rota: Rota, kind: str) -> None:
    ran: Counter[str] = Counter()

    def charge(amount: int) -> dict[str, Any]:
        ran["charge"] += 1
        return {"charged": amount, "as": (1, 2)}

    async def body(ctx: JobContext, step: Call, sleep: Call) -> Any:
        receipt = await step("charge", charge, 30)
        ran["between"] += 1
        if ctx.attempt == 1:
            raise RuntimeError("the mail server is down")
        return await step("mail", lambda: receipt["charged"] + 1)

    job_id = rota.queue(workflow(rota, kind, body, retries=2, retry_delay=0))
    rota.drain()
    assert rota.job(job_id).state is JobState.SUCCEEDED
    assert rota.result(job_id) == 31
    assert ran == {"charge": 1, "between": 2}, "the code between steps runs again, steps do not"
    steps = rota.steps(job_id)
    assert [(step.name, step.result) for step in steps] == [
        ("charge", {"charged": 30, "as": [1, 2]}),
        ("mail", 31),
    ]


@pytest.mark.parametrize("kind", KINDS)
def test_a_step_returns_its_value_as_saved_the_first_time_too(rota: Rota, kind: str) -> None:
    seen: list[Any] = []

    async def body(ctx: JobContext, step: Call, sleep: Call) -> None:
        seen.append(await step("tuple", lambda: (1, {"a": None})))
        seen.append(await step("nothing", lambda: None))

    rota.queue(workflow(rota, kind, body))
    rota.drain()
    assert seen == [[1, {"a": None}], None], "JSON's round trip: what a replay returns"


@pytest.mark.parametrize("kind", KINDS)
def test_names_used_again_are_numbered_by_occurrence(rota: Rota, kind: str) -> None:
    calls: list[int] = []

    def fetch(page: int) -> int:
        calls.append(page)
        return page * 10

    async def body(ctx: JobContext, step: Call, sleep: Call) -> int:
        total = 0
        for page in range(3):
            total += await step("fetch", fetch, page)
        if ctx.attempt == 1:
            raise RuntimeError("again")
        return total

    job_id = rota.queue(workflow(rota, kind, body, retries=1, retry_delay=0))
    rota.drain()
    assert rota.result(job_id) == 30
    assert calls == [0, 1, 2]
    assert [step.name for step in rota.steps(job_id)] == ["fetch", "fetch#2", "fetch#3"]


@pytest.mark.parametrize("kind", KINDS)
def test_a_step_that_raises_fails_the_attempt_and_runs_again_on_the_retry(
    rota: Rota, kind: str
) -> None:
    ran: Counter[str] = Counter()

    def first() -> str:
        ran["first"] += 1
        return "ok"

    def flaky() -> str:
        ran["flaky"] += 1
        if ran["flaky"] < 3:
            raise TimeoutError("the warehouse did not answer")
        return "shipped"

    async def body(ctx: JobContext, step: Call, sleep: Call) -> str:
        await step("first", first)
        return str(await step("flaky", flaky))

    job_id = rota.queue(workflow(rota, kind, body, retries=3, retry_delay=0))
    rota.drain()
    job = rota.job(job_id)
    assert (job.state, job.attempt, rota.result(job_id)) == (JobState.SUCCEEDED, 3, "shipped")
    assert [error.message for error in job.errors] == ["the warehouse did not answer"] * 2
    assert ran == {"first": 1, "flaky": 3}


@pytest.mark.parametrize("kind", KINDS)
def test_a_step_whose_result_is_not_json_fails_the_job_at_once(rota: Rota, kind: str) -> None:
    async def body(ctx: JobContext, step: Call, sleep: Call) -> None:
        await step("bad", lambda: {1, 2})

    job_id = rota.queue(workflow(rota, kind, body, retries=3))
    rota.drain()
    job = rota.job(job_id)
    assert (job.state, job.errors[-1].code) == (JobState.FAILED, ErrorCode.INVALID_RESULT)
    assert "step 'bad'" in job.errors[-1].message
    assert rota.steps(job_id) == []


@pytest.mark.parametrize("kind", KINDS)
def test_a_week_long_sleep_holds_no_worker_and_spends_no_attempt(
    rota: Rota, clock: FakeClock, kind: str
) -> None:
    ran: Counter[str] = Counter()
    heard: list[Any] = []
    rota.on("job.sleeping", heard.append)

    async def body(ctx: JobContext, step: Call, sleep: Call) -> str:
        await step("charge", lambda: ran.update(["charge"]))
        await sleep("cool-off", WEEK)
        ran["after"] += 1
        await sleep("short", 60)
        return "emailed"

    job_id = rota.queue(workflow(rota, kind, body, retries=0))
    start = clock.now()
    assert rota.drain().total == 1
    job = rota.job(job_id)
    assert (job.state, job.attempt, job.snoozes, job.errors) == (JobState.PENDING, 0, 0, ())
    assert job.run_at == start + WEEK
    assert [event.fields["until"] for event in heard] == [start + WEEK]
    clock.advance(WEEK - timedelta(seconds=1))
    assert rota.drain().total == 0, "asleep until its moment"
    clock.advance(1)
    assert rota.drain().total == 1
    assert rota.job(job_id).run_at == clock.now() + timedelta(seconds=60)
    clock.advance(60)
    rota.drain()
    job = rota.job(job_id)
    assert (job.state, job.attempt, rota.result(job_id)) == (JobState.SUCCEEDED, 1, "emailed")
    assert ran == {"charge": 1, "after": 2}
    names = [(step.name, step.result) for step in rota.steps(job_id)]
    assert names == [
        ("charge", None),
        ("cool-off", (start + WEEK).isoformat()),
        ("short", (start + WEEK + timedelta(seconds=60)).isoformat()),
    ]


@pytest.mark.parametrize("kind", KINDS)
def test_a_step_finished_after_the_lease_was_lost_saves_nothing(rota: Rota, kind: str) -> None:
    jobs = sql_store(rota).schema.jobs

    def taken_over() -> str:
        # Another worker rescued the job and claimed it while this step ran.
        with sql_store(rota).engine.begin() as connection:
            connection.execute(update(jobs).values(lease_owner="another-worker"))
        return "charged twice?"

    async def body(ctx: JobContext, step: Call, sleep: Call) -> None:
        await step("charge", taken_over)
        await step("never", lambda: "reached")

    job_id = rota.queue(workflow(rota, kind, body, retries=3))
    rota.drain()
    assert rota.steps(job_id) == []
    job = rota.job(job_id)
    assert (job.state, job.lease_owner, job.errors) == (JobState.RUNNING, "another-worker", ())
    assert not rota.store.workflow.save(job_id, "a-worker", job.attempt, "x", None, job.run_at)


def test_steps_need_a_worker_context() -> None:
    import logging

    ctx = JobContext(1, "t", "default", 1, None, logging.LoggerAdapter(logging.getLogger("t")))
    with pytest.raises(ConfigError, match=r"ctx\.step needs a job run by a rota worker"):
        ctx.step("x", lambda: 1)
    with pytest.raises(ConfigError, match=r"ctx\.sleep"):
        ctx.sleep("x", 1)


def test_steps_of_an_unknown_job_are_job_not_found(rota: Rota) -> None:
    with pytest.raises(JobNotFound):
        rota.steps(424242)


@pytest.mark.parametrize("kind", ["sync"])
def test_steps_and_signals_are_pruned_with_their_job(
    make_rota: Callable[..., Rota], clock: FakeClock, kind: str
) -> None:
    rota = make_rota(succeeded_retention=timedelta(days=1))

    async def body(ctx: JobContext, step: Call, sleep: Call) -> None:
        await step("a", lambda: 1)
        await step("b", lambda: 2)

    kept = rota.queue(workflow(rota, kind, body))
    assert rota.signal(kept, "never-waited-for", {"kept": "until the prune"})
    rota.drain()
    schema = sql_store(rota).schema
    counts = [select(func.count()).select_from(table) for table in (schema.steps, schema.signals)]
    with sql_store(rota).engine.connect() as connection:
        assert [connection.execute(count).scalar_one() for count in counts] == [2, 1]
    clock.advance(timedelta(days=2))
    assert rota.prune() == 1
    with sql_store(rota).engine.connect() as connection:
        assert [connection.execute(count).scalar_one() for count in counts] == [0, 0]
    with pytest.raises(JobNotFound):
        rota.steps(kept)
