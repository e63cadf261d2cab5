"""The service tests/faults/ runs as ``rota worker tests.apps.fault_app:app``.

Configured from the environment: ``ROTA_TEST_URL``, ``ROTA_TEST_PREFIX``, ``ROTA_TEST_DIR``,
``ROTA_TEST_LEASE``, ``ROTA_TEST_POLL`` and ``ROTA_TEST_CONCURRENCY``.  Each attempt appends
``<job id> <attempt> <pid>`` to ``<dir>/runs.<pid>``, with one ``write`` on an ``O_APPEND``
descriptor, so a line survives a SIGKILL of its process and the test can count double runs.
"""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

from rota import JobContext, Rota

RUNS = Path(os.environ["ROTA_TEST_DIR"]) / f"runs.{os.getpid()}"

app = Rota(
    os.environ["ROTA_TEST_URL"],
    table_prefix=os.environ["ROTA_TEST_PREFIX"],
    lease_seconds=float(os.environ.get("ROTA_TEST_LEASE", "2")),
    poll_interval=float(os.environ.get("ROTA_TEST_POLL", "0.2")),
    concurrency=int(os.environ.get("ROTA_TEST_CONCURRENCY", "10")),
    connect_timeout=10,
)
_runs = os.open(RUNS, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)


@app.task(retries=5, retry_delay=0.1)
async def record(ctx: JobContext, seconds: float) -> None:
    os.write(_runs, f"{ctx.job_id} {ctx.attempt} {os.getpid()}\n".encode())
    await asyncio.sleep(seconds)
