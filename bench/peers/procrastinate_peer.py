"""Procrastinate on PostgreSQL: enqueue rates, drain throughput and a busy worker's peak RSS.

Workers are ``procrastinate --app=... worker`` processes, the library's documented way to run
them. Jobs are kept after completion (its default, ``--delete-jobs=never``), so the window is
read from its own ``procrastinate_events`` table: first ``started`` to last ``succeeded``.

    python -m bench.peers.procrastinate_peer --quick
"""

from __future__ import annotations

import time

import procrastinate

from bench.common import Config, Result
from bench.peers import pg_support
from bench.peers.procrastinate_app import DSN_ENV, app, noop, sleep10ms

TASKS = {"noop": noop, "sleep10ms": sleep10ms}
CHUNK = 1_000


def _connector(dsn: str) -> procrastinate.PsycopgConnector:
    return procrastinate.PsycopgConnector(conninfo=dsn)


async def install(dsn: str) -> None:
    with app.replace_connector(_connector(dsn)):
        async with app.open_async():
            await app.schema_manager.apply_schema_async()


async def enqueue_single(dsn: str, count: int) -> float:
    """Seconds for ``count`` one-at-a-time ``defer_async`` calls, after a short warm-up."""
    with app.replace_connector(_connector(dsn)):
        async with app.open_async():
            for _ in range(10):
                await noop.defer_async()
            started = time.perf_counter()
            for _ in range(count):
                await noop.defer_async()
            return time.perf_counter() - started


async def enqueue_batch(dsn: str, task: str, count: int) -> float:
    """Seconds to enqueue ``count`` jobs with ``batch_defer_async``, ``CHUNK`` per call."""
    with app.replace_connector(_connector(dsn)):
        async with app.open_async():
            started = time.perf_counter()
            for first in range(0, count, CHUNK):
                size = min(CHUNK, count - first)
                await TASKS[task].batch_defer_async(*({} for _ in range(size)))
            return time.perf_counter() - started


def worker_flags(concurrency: int | None) -> list[str]:
    return [] if concurrency is None else [f"--concurrency={concurrency}"]


PEER = pg_support.Peer(
    system="procrastinate",
    database_stem="bench_procrastinate",
    dsn_env=DSN_ENV,
    packages=("procrastinate", "psycopg", "psycopg-pool"),
    default_concurrency=1,  # procrastinate.worker.WORKER_CONCURRENCY
    install=install,
    enqueue_single=enqueue_single,
    enqueue_batch=enqueue_batch,
    single_api="Task.defer_async",
    batch_api="Task.batch_defer_async",
    chunk=CHUNK,
    worker=(
        pg_support.PYTHON,
        "-m",
        "procrastinate",
        "--log-level=warning",  # as rota's workers run in its benchmarks; INFO logs every job
        "--app=bench.peers.procrastinate_app.app",
        "worker",
    ),
    worker_flags=worker_flags,
    reset_sql="TRUNCATE procrastinate_events, procrastinate_jobs, procrastinate_periodic_defers,"
    " procrastinate_workers RESTART IDENTITY CASCADE",
    busy_sql="SELECT EXISTS (SELECT 1 FROM procrastinate_jobs WHERE status IN ('todo', 'doing'))",
    window_sql="SELECT EXTRACT(EPOCH FROM"
    " (SELECT max(at) FROM procrastinate_events WHERE type = 'succeeded')"
    " - (SELECT min(at) FROM procrastinate_events WHERE type = 'started'))::float8",
    succeeded_sql="SELECT count(*) FROM procrastinate_jobs WHERE status = 'succeeded'",
    window="db: first 'started' event -> last 'succeeded' event",
)


def run(config: Config) -> list[Result]:
    """Every Procrastinate figure, measured in a database made for this run."""
    return pg_support.measure(PEER, config)


if __name__ == "__main__":
    raise SystemExit(pg_support.main(run, __doc__.splitlines()[0]))
