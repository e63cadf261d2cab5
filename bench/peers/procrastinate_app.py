"""The Procrastinate app its worker processes load: ``procrastinate --app=<this>.app worker``.

Kept apart from the benchmark driver so a worker imports only what a real deployment would.
"""

from __future__ import annotations

import asyncio
import os

import procrastinate

DSN_ENV = "BENCH_PROCRASTINATE_DSN"

app = procrastinate.App(
    connector=procrastinate.PsycopgConnector(conninfo=os.environ.get(DSN_ENV, ""))
)


@app.task(name="noop")
async def noop() -> None:
    """Does nothing, so what is measured is the queue's own cost per job."""


@app.task(name="sleep10ms")
async def sleep10ms() -> None:
    """Waits 10 ms like an I/O-bound job; concurrency should hide the wait."""
    await asyncio.sleep(0.01)
