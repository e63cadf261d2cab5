"""The service the throughput and latency benchmarks run under ``rota worker``: three tasks.

No task here has a flow limit, so its worker claims on the plain path; the flow benchmark's
worker (``bench.flow_app``) has the limited ones.
"""

from __future__ import annotations

import asyncio
import os

from rota import JobContext, Rota

app = Rota(
    os.environ.get("BENCH_URL", "sqlite:///bench.db"),
    table_prefix=os.environ.get("BENCH_PREFIX", "bench_"),
    concurrency=int(os.environ.get("BENCH_CONCURRENCY", "50")),
    poll_interval=float(os.environ.get("BENCH_POLL", "0.5")),
)


@app.task(retries=0)
async def noop(ctx: JobContext) -> None:
    """No work at all: what is measured is rota's own cost per job."""


@app.task(retries=0)
def noop_sync(ctx: JobContext) -> None:
    """No work, in the worker's threads: what a sync handler adds to a job's cost."""


@app.task(retries=0)
async def sleep10(ctx: JobContext) -> None:
    """I/O-bound work: 10 ms of waiting, which concurrency should overlap."""
    await asyncio.sleep(0.01)
