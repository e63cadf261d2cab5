"""A Rota application for tests/test_processes.py, configured entirely from the environment.

The test process starts ``rota worker tests.apps.process_app:app`` with:

- ``ROTA_TEST_URL``, ``ROTA_TEST_PREFIX``: the test's database and table prefix;
- ``ROTA_TEST_DIR``: a directory where handlers leave marks the test can observe;
- ``ROTA_TEST_LEASE``, ``ROTA_TEST_POLL``: lease and poll interval in seconds;
- ``ROTA_TEST_CONCURRENCY``: jobs at once (default 5).

Each attempt writes ``<dir>/<job id>.<attempt>.started`` (and ``.finished`` when it returns),
holding the wall-clock time, so the test sees which attempts ran, in which process, and when.
A process that exits writes ``<dir>/exited.<pid>`` from an exit hook.
"""

from __future__ import annotations

import asyncio
import atexit
import os
import sys
import threading
import time
from pathlib import Path

from rota import JobContext
from tests.apps import isolated_app
from tests.apps.environment import rota_from_environment

MARKS = Path(os.environ["ROTA_TEST_DIR"])

app = rota_from_environment(concurrency=5)
atexit.register(lambda: (MARKS / f"exited.{os.getpid()}").write_text("exit hooks ran"))
"""``rota worker`` skips the interpreter's teardown at exit, never the exit hooks."""


def mark(ctx: JobContext, event: str) -> None:
    """Write ``<job>.<attempt>.<event>`` atomically, with the time and this process's pid."""
    path = MARKS / f"{ctx.job_id}.{ctx.attempt}.{event}"
    partial = path.with_name(path.name + f".{os.getpid()}.tmp")
    partial.write_text(f"{time.time()!r} {os.getpid()}")
    os.replace(partial, path)


@app.task(retries=3, retry_delay=60)
def block_on_first_attempt(ctx: JobContext) -> None:
    """Attempt 1 blocks (until its worker is killed); any later attempt succeeds."""
    mark(ctx, "started")
    if ctx.attempt == 1:
        ctx.cancelled.wait(120)
        raise RuntimeError("attempt 1 was meant to be killed, not to return")
    mark(ctx, "finished")


@app.task(retries=0)
def work_for(ctx: JobContext, seconds: float) -> None:
    mark(ctx, "started")
    time.sleep(seconds)
    mark(ctx, "finished")


@app.task(retries=3, retry_delay=60)
def sleep_ignoring_cancel(ctx: JobContext, seconds: float) -> None:
    """A sync handler that never looks at ``ctx.cancelled``: its thread cannot be stopped."""
    mark(ctx, "started")
    time.sleep(seconds)
    mark(ctx, "finished")


@app.task(retries=3, retry_delay=60)
def wait_for_cancel(ctx: JobContext, seconds: float) -> None:
    """A sync handler that stops as soon as ``ctx.cancelled`` is set."""
    mark(ctx, "started")
    if not ctx.cancelled.wait(seconds):
        mark(ctx, "finished")


@app.task(retries=3, retry_delay=60, queue="slow")
async def async_sleep(ctx: JobContext, seconds: float) -> None:
    mark(ctx, "started")
    await asyncio.sleep(seconds)
    mark(ctx, "finished")


@app.task(retries=0)
def exit_sync(ctx: JobContext) -> None:
    mark(ctx, "started")
    sys.exit(3)


@app.task(retries=0)
async def exit_async(ctx: JobContext) -> None:
    mark(ctx, "started")
    sys.exit(3)


@app.task(retries=0)
def raise_error(ctx: JobContext) -> None:
    mark(ctx, "started")
    raise ValueError("boom")


@app.task(retries=0, timeout=0.5)
def hang_past_timeout(ctx: JobContext) -> None:
    """Ignores its timeout and ``ctx.cancelled``; the worker must carry on without it."""
    mark(ctx, "started")
    time.sleep(120)


@app.task(retries=2, retry_delay=0)
def stop_iteration(ctx: JobContext) -> None:
    """``StopIteration`` from a sync handler (an ``asyncio`` future refuses to hold one)."""
    mark(ctx, "started")
    raise StopIteration("no more")


@app.task(retries=0)
def succeed(ctx: JobContext) -> None:
    mark(ctx, "started")
    mark(ctx, "finished")


@app.task(retries=3, retry_delay=0)
def long_first_attempt(ctx: JobContext, seconds: float) -> None:
    """Attempt 1 waits ``seconds``, ignoring ``ctx.cancelled``; later attempts are quick.

    It waits on an event nobody sets rather than ``time.sleep``, which fails (EINVAL) under the
    libfaketime of tests/faults/test_clock_steps.py."""
    mark(ctx, "started")
    if ctx.attempt == 1:
        threading.Event().wait(seconds)
    mark(ctx, "finished")


app.task(isolation="process", retries=3, retry_delay=0)(isolated_app.stubborn)
"""Its first run ignores SIGTERM in a child process of its own: only SIGKILL stops it."""


@app.task(retries=3, retry_delay=0)
def two_steps(ctx: JobContext) -> str:
    """A workflow of two steps, each appending a line to ``<dir>/<job id>.<step>.runs`` (its
    side effect); attempt 1 blocks between them until its worker is killed."""

    def side_effect(step: str) -> str:
        path = MARKS / f"{ctx.job_id}.{step}.runs"
        descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        try:
            os.write(descriptor, f"{ctx.attempt} {os.getpid()}\n".encode())
        finally:
            os.close(descriptor)
        return f"{step} done by {os.getpid()}"

    first = ctx.step("first", side_effect, "first")
    mark(ctx, "between")
    if ctx.attempt == 1:
        ctx.cancelled.wait(120)
        raise RuntimeError("attempt 1 was meant to be killed between its steps")
    second = ctx.step("second", side_effect, "second")
    return f"{first}; {second}"
