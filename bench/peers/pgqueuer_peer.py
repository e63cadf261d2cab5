"""pgqueuer on PostgreSQL: enqueue rates, drain throughput and a busy worker's peak RSS.

Workers are ``pgq run module:factory`` processes (run as ``python -m pgqueuer run``), the
library's documented way to run them, on its default durable (logged) tables. A finished job
is deleted from the queue table and logged in ``pgqueuer_log``; the window is read from that
log: first ``picked`` to last ``successful``.

    python -m bench.peers.pgqueuer_peer --quick
"""

from __future__ import annotations

import time

import asyncpg
from pgqueuer.db import AsyncpgDriver
from pgqueuer.queries import Queries

from bench.common import Config, Result
from bench.peers import pg_support
from bench.peers.pgqueuer_app import DSN_ENV

DEFAULT_BATCH = 10  # `pgq run --batch-size` default
CHUNK = 1_000


async def install(dsn: str) -> None:
    connection = await asyncpg.connect(dsn)
    try:
        await Queries(AsyncpgDriver(connection)).install()
    finally:
        await connection.close()


async def enqueue_single(dsn: str, count: int) -> float:
    """Seconds for ``count`` one-at-a-time ``Queries.enqueue`` calls, after a short warm-up."""
    connection = await asyncpg.connect(dsn)
    try:
        queries = Queries(AsyncpgDriver(connection))
        for _ in range(10):
            await queries.enqueue("noop", None)
        started = time.perf_counter()
        for _ in range(count):
            await queries.enqueue("noop", None)
        return time.perf_counter() - started
    finally:
        await connection.close()


async def enqueue_batch(dsn: str, entrypoint: str, count: int) -> float:
    """Seconds to enqueue ``count`` jobs with list arguments to ``enqueue``, ``CHUNK`` per call."""
    connection = await asyncpg.connect(dsn)
    try:
        queries = Queries(AsyncpgDriver(connection))
        started = time.perf_counter()
        for first in range(0, count, CHUNK):
            size = min(CHUNK, count - first)
            await queries.enqueue([entrypoint] * size, [None] * size, [0] * size)
        return time.perf_counter() - started
    finally:
        await connection.close()


def worker_flags(concurrency: int | None) -> list[str]:
    """No cap by default; a cap must be at least twice the batch size, so shrink it to fit."""
    if concurrency is None:
        return []
    batch = min(DEFAULT_BATCH, concurrency // 2)
    return ["--batch-size", str(batch), "--max-concurrent-tasks", str(concurrency)]


PEER = pg_support.Peer(
    system="pgqueuer",
    database_stem="bench_pgqueuer",
    dsn_env=DSN_ENV,
    packages=("pgqueuer", "asyncpg", "typer"),
    default_concurrency=None,  # unlimited: `--max-concurrent-tasks` unset
    install=install,
    enqueue_single=enqueue_single,
    enqueue_batch=enqueue_batch,
    single_api="Queries.enqueue",
    batch_api="Queries.enqueue(lists)",
    chunk=CHUNK,
    worker=(
        pg_support.PYTHON,
        "-m",
        "pgqueuer",
        "run",
        "bench.peers.pgqueuer_app:create_pgqueuer",
        "--log-level=warning",
    ),
    worker_flags=worker_flags,
    reset_sql="TRUNCATE pgqueuer, pgqueuer_log, pgqueuer_statistics RESTART IDENTITY",
    busy_sql="SELECT EXISTS (SELECT 1 FROM pgqueuer)",
    window_sql="SELECT EXTRACT(EPOCH FROM max(created) FILTER (WHERE status = 'successful')"
    " - min(created) FILTER (WHERE status = 'picked'))::float8 FROM pgqueuer_log",
    succeeded_sql="SELECT count(*) FROM pgqueuer_log WHERE status = 'successful'",
    window="db: first 'picked' log row -> last 'successful' log row",
)


def run(config: Config) -> list[Result]:
    """Every pgqueuer figure, measured in a database made for this run."""
    return pg_support.measure(PEER, config)


if __name__ == "__main__":
    raise SystemExit(pg_support.main(run, __doc__.splitlines()[0]))
