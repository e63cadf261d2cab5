"""The service each process of ``bench.idle_fleet`` runs: one task and one nightly schedule,
nothing due, so every worker stays idle."""

from __future__ import annotations

import os

from rota import JobContext, Rota

app = Rota(
    os.environ.get("BENCH_URL", "sqlite:///bench-idle-fleet.db"),
    table_prefix=os.environ.get("BENCH_PREFIX", "bench_idle_fleet_"),
    poll_interval=float(os.environ.get("BENCH_POLL", "0.5")),
)


@app.task(cron="0 3 * * *", retries=0)
async def nightly(ctx: JobContext) -> None:
    """Due at 03:00 only: the benchmark never runs it."""


@app.task(retries=0)
async def noop(ctx: JobContext) -> None:
    """Registered so that each worker's look names a task; never queued."""
