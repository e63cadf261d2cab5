"""The service tests/faults/ runs as ``rota worker tests.apps.fault_app:app``.

Configured from the environment: ``ROTA_TEST_URL``, ``ROTA_TEST_PREFIX``, ``ROTA_TEST_DIR``,
``ROTA_TEST_LEASE``, ``ROTA_TEST_POLL`` and ``ROTA_TEST_CONCURRENCY``.  Each attempt appends
``<job id> <attempt> <pid>`` to ``<dir>/runs.<pid>``, with one ``write`` on an ``O_APPEND``
descriptor, so a line survives a SIGKILL of its process and the test can count double runs.
"""

from __future__ import annotations

import asyncio
import os

from rota import JobContext
from tests.apps.environment import marks_file, rota_from_environment

app = rota_from_environment()
_runs = marks_file("runs")


@app.task(retries=5, retry_delay=0.1)
async def record(ctx: JobContext, seconds: float) -> None:
    os.write(_runs, f"{ctx.job_id} {ctx.attempt} {os.getpid()}\n".encode())
    await asyncio.sleep(seconds)
