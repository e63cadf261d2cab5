"""The service ``bench.soak`` runs under ``rota worker``: tasks that note every attempt they start.

Each worker process appends ``job_id attempt task`` to its own file in ``$SOAK_RECORD_DIR``,
opened once with ``O_APPEND`` and written with ``os.write``: the line is in the kernel when the
handler returns, so nothing is lost however the process ends, and counting runs adds no database
write that could hide or cause a duplicate.  The driver imports this module too (to enqueue with
the tasks' definitions); without ``$SOAK_RECORD_DIR`` it records nothing.

The soak tasks touch the paths that could leak over hours: sync handlers in the thread pool,
payloads of a few KB, failed attempts with tracebacks, retries and timeouts.
"""

from __future__ import annotations

import asyncio
import hashlib
import os
from typing import Any

from rota import JobContext, Rota

app = Rota(
    os.environ.get("BENCH_URL", "sqlite:///bench-soak.db"),
    table_prefix=os.environ.get("BENCH_PREFIX", "soak_"),
    concurrency=int(os.environ.get("BENCH_CONCURRENCY", "50")),
    poll_interval=float(os.environ.get("BENCH_POLL", "0.5")),
)

_RECORD_DIR = os.environ.get("SOAK_RECORD_DIR")
_record_fd = (
    os.open(
        os.path.join(_RECORD_DIR, f"{os.getpid()}.runs"),
        os.O_WRONLY | os.O_APPEND | os.O_CREAT,
        0o644,
    )
    if _RECORD_DIR
    else None
)

EXPECTED = {
    "noop": ("succeeded", 1),
    "tick": ("succeeded", 1),
    "blob": ("succeeded", 1),
    "flaky": ("succeeded", 2),
    "slow": ("succeeded", 2),
    "doomed": ("failed", 2),
}
"""Final state and attempt each task's jobs must end with."""


def record(ctx: JobContext) -> None:
    if _record_fd is not None:
        os.write(_record_fd, f"{ctx.job_id} {ctx.attempt} {ctx.task}\n".encode())


@app.task()
async def noop(ctx: JobContext) -> None:
    """The load phase's job: rota's own cost, and one line of evidence that it ran."""
    record(ctx)


@app.task()
async def tick(ctx: JobContext, n: int) -> int:
    record(ctx)
    return sum(range(n))


@app.task()
def blob(ctx: JobContext, data: str, meta: dict[str, Any]) -> str:
    """Sync, so it runs in the worker's thread pool, with a payload of a few KB."""
    record(ctx)
    return hashlib.sha256(data.encode()).hexdigest() + str(len(meta))


@app.task(retries=2, retry_delay=1.0)
async def flaky(ctx: JobContext) -> None:
    """Fails its first attempt: an error with a traceback is stored, then a retry succeeds."""
    record(ctx)
    if ctx.attempt == 1:
        raise RuntimeError(f"first attempt of job {ctx.job_id} fails on purpose")


@app.task(retries=1, retry_delay=1.0, timeout=0.2)
async def slow(ctx: JobContext) -> None:
    """Times out on its first attempt (the handler is cancelled), then succeeds."""
    record(ctx)
    if ctx.attempt == 1:
        await asyncio.sleep(5)


@app.task(retries=1, retry_delay=1.0)
async def doomed(ctx: JobContext, data: str) -> None:
    """Fails every attempt, so its jobs end ``failed`` with two errors each."""
    record(ctx)
    raise ValueError(f"job {ctx.job_id} always fails ({len(data)} bytes of input)")
