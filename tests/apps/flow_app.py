"""The service tests/test_flow_processes.py runs as ``rota worker tests.apps.flow_app:app``.

Configured from the environment like tests/apps/fault_app.py (``ROTA_TEST_URL``,
``ROTA_TEST_PREFIX``, ``ROTA_TEST_DIR``, ``ROTA_TEST_LEASE``, ``ROTA_TEST_POLL``,
``ROTA_TEST_CONCURRENCY``) plus ``ROTA_TEST_RATE``, the rate limit of ``rated``.  Each attempt
appends ``S <key> <job> <attempt> <pid> <time>`` when it starts and ``E ...`` when it ends to
``<dir>/flow.<pid>``, each with one ``write`` on an ``O_APPEND`` descriptor, so the lines of a
SIGKILLed process survive and the test can check that no two jobs of one key overlapped.
"""

from __future__ import annotations

import asyncio
import os
import time

from rota import JobContext
from tests.apps.environment import marks_file, rota_from_environment

app = rota_from_environment()
_marks = marks_file("flow")


def mark(event: str, key: object, ctx: JobContext) -> None:
    line = f"{event} {key} {ctx.job_id} {ctx.attempt} {os.getpid()} {time.time()!r}\n"
    os.write(_marks, line.encode())


async def run(ctx: JobContext, key: object, seconds: float) -> None:
    mark("S", key, ctx)
    await asyncio.sleep(seconds)
    mark("E", key, ctx)


@app.task(concurrency_limit=1, concurrency_key="k:{key}", retries=5, retry_delay=0.1)
async def limited(ctx: JobContext, key: int, seconds: float) -> None:
    await run(ctx, key, seconds)


@app.task(retries=5, retry_delay=0.1)
async def unlimited(ctx: JobContext, key: int, seconds: float) -> None:
    await run(ctx, key, seconds)


@app.task(concurrency_limit=1, concurrency_key="{key}", retries=5, retry_delay=0.1)
async def hold(ctx: JobContext, key: str, seconds: float) -> None:
    """Attempt 1 holds its key for ``seconds`` (until its process is killed); a rerun not."""
    await run(ctx, key, seconds if ctx.attempt == 1 else 0)


@app.task(rate_limit=os.environ.get("ROTA_TEST_RATE", "20/s"), retries=0)
async def rated(ctx: JobContext) -> None:
    await run(ctx, "rated", 0)
