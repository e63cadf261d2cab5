"""The service of the flow-limit benchmark (``bench.flow``): keyed tasks, one with a limit.

A worker with a limited task claims on the flow path for every task it runs, which is why the
throughput benchmark's worker (``bench.apps``) has none.
"""

from __future__ import annotations

import asyncio

from bench.apps import app
from rota import JobContext


@app.task(retries=0)
async def keyed(ctx: JobContext, key: int) -> None:
    """10 ms of waiting, with a key, as ``keyed_limited`` but without a limit."""
    await asyncio.sleep(0.01)


@app.task(retries=0, concurrency_limit=1, concurrency_key="k:{key}")
async def keyed_limited(ctx: JobContext, key: int) -> None:
    """At most one job per key runs at once across every worker (bench/flow.py)."""
    await asyncio.sleep(0.01)
