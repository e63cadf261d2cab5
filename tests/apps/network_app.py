"""The service tests/faults/test_network.py runs, in its own network namespace or on the host.

Configured like tests/apps/fault_app.py (``ROTA_TEST_URL``, ``ROTA_TEST_PREFIX``,
``ROTA_TEST_DIR``, ``ROTA_TEST_LEASE``, ``ROTA_TEST_POLL``, ``ROTA_TEST_CONCURRENCY``), plus
``ROTA_TEST_READ_TIMEOUT`` and ``ROTA_TEST_KEEPALIVE``. Each attempt of ``hold`` appends
``<job> <attempt> <pid> start|end|stop <time>`` lines to ``<dir>/runs.<pid>`` with one
``O_APPEND`` write each, and returns the pid of the process that finished it.
"""

from __future__ import annotations

import asyncio
import os
import time

from rota import JobContext
from tests.apps.environment import marks_file, rota_from_environment

app = rota_from_environment(
    read_timeout=float(os.environ.get("ROTA_TEST_READ_TIMEOUT", "60")),
    keepalive=float(os.environ.get("ROTA_TEST_KEEPALIVE", "15")),
)
_runs = marks_file("runs")


def _mark(ctx: JobContext, event: str) -> None:
    line = f"{ctx.job_id} {ctx.attempt} {os.getpid()} {event} {time.time():.3f}\n"
    os.write(_runs, line.encode())


@app.task(retries=5, retry_delay=0.1)
async def hold(ctx: JobContext, seconds: float) -> int:
    _mark(ctx, "start")
    try:
        await asyncio.sleep(seconds)
    except asyncio.CancelledError:
        _mark(ctx, "stop")
        raise
    _mark(ctx, "end")
    return os.getpid()
