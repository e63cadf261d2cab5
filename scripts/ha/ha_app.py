"""The service the failover workload runs: ``rota worker scripts/ha/ha_app.py:app``.

Two tasks: ``record``, one queued job of the workload (its argument ``n`` is the producer's
sequence number, which stays the job's identity when a failover hands its id to another job),
and ``tick``, a ``* * * * *`` cron task. Every execution appends one line to
``$ROTA_HA_DIR/marks.<pid>`` with a single ``write`` on an ``O_APPEND`` descriptor, so a line
survives a SIGKILL whole and the harness can count executions, whatever the database kept:

    job <n> <job id> <attempt> <pid> <unix time>
    tick <scheduled_at, unix> <job id> <attempt> <pid> <unix time>

The harness builds the same ``Rota`` in its own process with ``make`` (to queue ``record``
bound to its signature); a worker process gets it as ``app``, configured from ``ROTA_HA_URL``,
``ROTA_HA_PREFIX``, ``ROTA_HA_DIR``, ``ROTA_HA_CONCURRENCY``, ``ROTA_HA_WORK`` and
``ROTA_HA_TICK_WORK`` (the seconds each job and each tick takes).
"""

from __future__ import annotations

import asyncio
import os
import time
from pathlib import Path

from rota import JobContext, Rota

LEASE = 5.0
"""Short, so a job whose claim or completion the failover lost is rescued within the run."""
POLL = 0.2
CONNECT_TIMEOUT = 10.0
IO_TIMEOUT = 10.0
"""Read and write timeouts: a failover must not leave a call waiting rota's default minute."""


class Marks:
    """The process's own marks file, opened at the first mark (the harness writes none)."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.descriptor: int | None = None

    def write(self, *fields: object) -> None:
        if self.descriptor is None:
            path = self.directory / f"marks.{os.getpid()}"
            self.descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        line = " ".join(str(field) for field in (*fields, os.getpid(), f"{time.time():.6f}"))
        os.write(self.descriptor, f"{line}\n".encode())


def make(
    url: str,
    prefix: str,
    marks: Path,
    concurrency: int = 10,
    work: float = 0.05,
    tick_work: float = 2.0,
) -> Rota:
    """The workload's ``Rota`` on ``url`` with its two tasks registered."""
    app = Rota(
        url,
        table_prefix=prefix,
        concurrency=concurrency,
        lease_seconds=LEASE,
        poll_interval=POLL,
        connect_timeout=CONNECT_TIMEOUT,
        read_timeout=IO_TIMEOUT,
        write_timeout=IO_TIMEOUT,
    )
    written = Marks(marks)

    @app.task(retries=5, retry_delay=0.5)
    async def record(ctx: JobContext, n: int) -> None:
        written.write("job", n, ctx.job_id, ctx.attempt)
        await asyncio.sleep(work)

    @app.task(cron="* * * * *", retries=5, retry_delay=0.5)
    async def tick(ctx: JobContext) -> None:
        scheduled = ctx.scheduled_at.timestamp() if ctx.scheduled_at else 0.0
        written.write("tick", f"{scheduled:.0f}", ctx.job_id, ctx.attempt)
        await asyncio.sleep(tick_work)

    return app


def from_environment() -> Rota:
    return make(
        os.environ["ROTA_HA_URL"],
        os.environ["ROTA_HA_PREFIX"],
        Path(os.environ["ROTA_HA_DIR"]),
        int(os.environ.get("ROTA_HA_CONCURRENCY", "10")),
        float(os.environ.get("ROTA_HA_WORK", "0.05")),
        float(os.environ.get("ROTA_HA_TICK_WORK", "2")),
    )


def __getattr__(name: str) -> Rota:
    """``app``, built on first access: importing this module from the harness needs no
    environment."""
    if name != "app":
        raise AttributeError(name)
    app = from_environment()
    globals()["app"] = app
    return app
