"""The pgqueuer factory its worker processes load: ``pgq run <this>:create_pgqueuer``.

Kept apart from the benchmark driver so a worker imports only what a real deployment would.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import asyncpg
from pgqueuer import PgQueuer
from pgqueuer.models import Job

DSN_ENV = "BENCH_PGQUEUER_DSN"


@asynccontextmanager
async def create_pgqueuer() -> AsyncIterator[PgQueuer]:
    """One connection and two entrypoints, as the library's factory examples do."""
    connection = await asyncpg.connect(os.environ[DSN_ENV])
    pgq = PgQueuer.from_asyncpg_connection(connection)

    @pgq.entrypoint("noop")
    async def noop(job: Job) -> None:
        """Does nothing, so what is measured is the queue's own cost per job."""

    @pgq.entrypoint("sleep10ms")
    async def sleep10ms(job: Job) -> None:
        """Waits 10 ms like an I/O-bound job; concurrency should hide the wait."""
        await asyncio.sleep(0.01)

    try:
        yield pgq
    finally:
        await connection.close()
