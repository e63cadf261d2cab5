"""``isolation="process"``: each attempt of a sync handler runs in a child process of its own.

Real child processes (multiprocessing ``spawn``).  A child that calls ``os._exit``, segfaults
or runs out of address space fails its attempt with a recorded error while the worker goes on
serving other jobs; a child that ignores SIGTERM is SIGKILLed at its timeout and the job is
retried; one stopped at shutdown is gone when the worker's ``stop`` returns.  The handlers
live in tests/apps/isolated_app.py, since a child imports its handler by name.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from rota import ConfigError, JobContext, JobState, Rota
from rota.core.clock import SystemClock
from rota.errors import InvalidResult
from rota.runtime.worker import isolation
from tests.apps import isolated_app
from tests.helpers import eventually

CHILD_TIMEOUT = 8
"""Seconds a child may run: several times its start-up, which a loaded CI machine stretched past
the 3 s these tests once gave (the child had not reached its handler when it was killed)."""

pytestmark = [pytest.mark.slow, pytest.mark.sqlite_only]
FINAL = {JobState.SUCCEEDED, JobState.FAILED, JobState.CANCELLED}

CRASHES = {
    "exit_3": ("rota.errors.ExecutionFailed", "exited with code 3"),
    "segfault": ("rota.errors.ExecutionFailed", "killed by signal SIGSEGV"),
    "blow_up": ("builtins.MemoryError", "MemoryError"),
    "raises": ("builtins.LookupError", "not here"),
}


def isolated(rota: Rota, *handlers: Callable[..., Any], **options: Any) -> None:
    for handler in handlers:
        rota.task(isolation="process", **options)(handler)


def marks(path: Path) -> list[tuple[int, int, int, str]]:
    """``(job, attempt, pid, what)`` for every line the handlers wrote."""
    if not path.exists():
        return []
    rows = []
    for line in path.read_text().splitlines():
        job, attempt, pid, what = line.split(" ", 3)
        rows.append((int(job), int(attempt), int(pid), what))
    return rows


def queue_crashes(rota: Rota) -> dict[str, int]:
    return {name: rota.queue(name, *(["not here"] if name == "raises" else [])) for name in CRASHES}


def assert_crashes_recorded(rota: Rota, ids: dict[str, int]) -> None:
    for name, job_id in ids.items():
        job = rota.job(job_id)
        assert job.state is JobState.FAILED, (name, job)
        (error,) = job.errors
        kind, words = CRASHES[name]
        assert (error.code, error.type) == ("EXECUTION_FAILED", kind), (name, error)
        assert words in error.message, (name, error)
        if name == "raises":
            child = error.traceback.split("Traceback (most recent call last):\n")[1]
            assert child.startswith('  File "') and 'isolated_app.py", line' in child.split("\n")[0]
            assert "raise LookupError(message)" in error.traceback


def test_crashing_children_fail_their_attempt_only(
    make_rota: Callable[..., Rota], tmp_path: Path
) -> None:
    """Drained on every backend: the crashes are recorded, the jobs after them succeed."""
    rota = make_rota()
    isolated(rota, isolated_app.exit_3, isolated_app.segfault, isolated_app.blow_up, retries=0)
    isolated(rota, isolated_app.raises, isolated_app.quick, retries=0)
    ids = queue_crashes(rota)
    quick = [rota.queue("quick", str(tmp_path / "marks")) for _ in range(2)]
    result = rota.drain()
    assert (result.succeeded, result.failed) == (2, 4)
    assert_crashes_recorded(rota, ids)
    assert all(rota.job(job_id).state is JobState.SUCCEEDED for job_id in quick)
    pids = {pid for _, _, pid, _ in marks(tmp_path / "marks")}
    assert len(pids) == 2 and os.getpid() not in pids


def test_a_started_worker_keeps_serving_after_its_children_crash(
    make_rota: Callable[..., Rota], tmp_path: Path
) -> None:
    rota = make_rota(clock=SystemClock(), concurrency=4)
    isolated(rota, isolated_app.exit_3, isolated_app.segfault, isolated_app.blow_up, retries=0)
    isolated(rota, isolated_app.raises, isolated_app.quick, retries=0)

    async def scenario() -> tuple[dict[str, int], list[int]]:
        async with rota:
            ids = queue_crashes(rota)
            await eventually(lambda: all(rota.job(i).state in FINAL for i in ids.values()), 30)
            later = [rota.queue("quick", str(tmp_path / "marks")) for _ in range(3)]
            await eventually(lambda: all(rota.job(i).state in FINAL for i in later), 30)
        return ids, later

    ids, later = asyncio.run(scenario())
    assert_crashes_recorded(rota, ids)
    assert [rota.job(job_id).state for job_id in later] == [JobState.SUCCEEDED] * 3


def test_a_child_that_ignores_sigterm_is_killed_at_its_timeout_and_the_job_retried(
    make_rota: Callable[..., Rota], tmp_path: Path
) -> None:
    rota = make_rota(clock=SystemClock())
    # The timeout leaves room for a child's start on a loaded machine (it counts from the spawn).
    isolated(rota, isolated_app.stubborn, timeout=CHILD_TIMEOUT, retries=1, retry_delay=0)
    path = tmp_path / "marks"
    job_id = rota.queue("stubborn", str(path), 60.0)
    started = time.monotonic()
    result = rota.drain()
    elapsed = time.monotonic() - started
    assert (result.retried, result.succeeded) == (1, 1)
    job = rota.job(job_id)
    assert (job.state, job.attempt) == (JobState.SUCCEEDED, 2)
    assert [error.code for error in job.errors] == ["TIMEOUT"]
    rows = marks(path)
    assert [(attempt, what) for _, attempt, _, what in rows] == [
        (1, "start"),
        (2, "start"),
        (2, "earlier alive=False"),
        (2, "end"),
    ]
    first = rows[0][2]
    assert not isolated_app.alive(first)  # SIGKILLed: it would have slept 60 s
    assert elapsed < 3 * CHILD_TIMEOUT


def test_sigterm_sets_cancelled_and_runs_finally_in_the_child(
    make_rota: Callable[..., Rota], tmp_path: Path
) -> None:
    rota = make_rota(clock=SystemClock())
    isolated(rota, isolated_app.polite, timeout=CHILD_TIMEOUT, retries=0)
    path = tmp_path / "marks"
    job_id = rota.queue("polite", str(path), 60.0)
    rota.drain()
    job = rota.job(job_id)
    assert job.state is JobState.FAILED
    assert [error.code for error in job.errors] == ["TIMEOUT"]
    assert [what for _, _, _, what in marks(path)] == ["start", "finally cancelled=True"]
    assert not isolated_app.alive(marks(path)[0][2])


def test_a_child_running_at_shutdown_is_stopped_and_its_job_returns(
    make_rota: Callable[..., Rota], tmp_path: Path
) -> None:
    rota = make_rota(clock=SystemClock())
    isolated(rota, isolated_app.stubborn)
    path = tmp_path / "marks"
    job_id = rota.queue("stubborn", str(path), 60.0)

    async def scenario() -> None:
        await rota.start()
        await eventually(lambda: marks(path), 30)
        started = time.monotonic()
        await rota.stop(grace=0.2)
        assert time.monotonic() - started < 0.2 + isolation.KILL_AFTER + 2

    asyncio.run(scenario())
    ((_, _, pid, _),) = marks(path)
    assert not isolated_app.alive(pid)
    job = rota.job(job_id)
    assert job.state is JobState.PENDING
    rota.drain()  # the next attempt does not ignore SIGTERM, and finishes
    assert rota.job(job_id).state is JobState.SUCCEEDED
    assert [what for _, _, _, what in marks(path)] == [
        "start",
        "start",
        "earlier alive=False",
        "end",
    ]


def test_arguments_context_and_result_cross_as_json(make_rota: Callable[..., Rota]) -> None:
    rota = make_rota()
    isolated(rota, isolated_app.echo, isolated_app.unencodable, isolated_app.no_context)
    args = [1, 2.5, "zürich ✓", None, True, [1, {"a": [2]}]]
    kwargs: dict[str, Any] = {"key": {"nested": ["x", 3]}, "empty": {}}
    job_id = rota.queue("echo", *args, queue="other", **kwargs)

    def attempt(task: str, job_id: int) -> Any:
        job = rota.job(job_id)
        ctx = JobContext(
            job_id=job.id,
            task=job.task,
            queue=job.queue,
            attempt=1,
            scheduled_at=job.scheduled_at,
            logger=logging.LoggerAdapter(logging.getLogger(f"rota.task.{task}"), {}),
            manual=True,
        )
        definition = rota.registry.get(task)
        text = asyncio.run(
            isolation.run(definition, ctx, job, rota.config.max_result_bytes, rota.events)
        )
        return None if text is None else json.loads(text)

    echoed = attempt("echo", job_id)
    pid = echoed.pop("pid")
    assert pid != os.getpid()
    job = rota.job(job_id)
    assert echoed == {
        "args": args,
        "kwargs": kwargs,
        "job_id": job_id,
        "task": "echo",
        "queue": "other",
        "attempt": 1,
        "scheduled_at": job.scheduled_at.isoformat() if job.scheduled_at else None,
        "manual": True,
    }
    assert attempt("no_context", rota.queue("no_context")) == 42
    with pytest.raises(InvalidResult, match="not JSON"):
        attempt("unencodable", rota.queue("unencodable"))


@pytest.mark.parametrize("slow", [False], ids=["fast"])
def test_what_a_child_cannot_run_is_refused_when_the_task_is_defined(
    make_rota: Callable[..., Rota], slow: bool
) -> None:
    rota = make_rota()

    async def asynchronous(ctx: JobContext) -> None: ...

    def inner(ctx: JobContext) -> None: ...

    with pytest.raises(ConfigError, match="sync handlers only"):
        rota.task(isolation="process")(asynchronous)
    with pytest.raises(ConfigError, match="import by name"):
        rota.task(isolation="process")(inner)
    with pytest.raises(ConfigError, match="import by name"):
        rota.task(name="anonymous", isolation="process")(lambda ctx: None)
    with pytest.raises(ConfigError, match="isolation must be one of"):
        rota.task(isolation="fork")(isolated_app.quick)  # type: ignore[call-overload]
    rota.task(isolation="thread")(asynchronous)
