"""The service the throughput and latency benchmarks run under ``rota worker``: two tasks."""

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
async def sleep10(ctx: JobContext) -> None:
    """I/O-bound work: 10 ms of waiting, which concurrency should overlap."""
    await asyncio.sleep(0.01)


@app.task(retries=0)
async def keyed(ctx: JobContext, key: int) -> None:
    """10 ms of waiting, with a key, as ``keyed_limited`` but without a limit."""
    await asyncio.sleep(0.01)


@app.task(retries=0, concurrency_limit=1, concurrency_key="k:{key}")
async def keyed_limited(ctx: JobContext, key: int) -> None:
    """At most one job per key runs at once across every worker (bench/flow.py)."""
    await asyncio.sleep(0.01)
