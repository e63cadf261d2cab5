"""rota's own scenarios: throughput, latency, history scale and footprint (enqueue, measured
beside bare SQL, is in ``bench.bare``).

Workers run as ``rota worker bench.apps:app`` subprocesses, as users deploy them; figures are
read from the jobs table (``started_at`` is set by the claim, ``finished_at`` by the report), so
process start-up is not counted in a throughput window.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import timedelta
from pathlib import Path
from typing import Any

from sqlalchemy import event, func, insert, select, text, update
from sqlalchemy.engine import Engine

from bench.common import Config, Result, cpu_seconds, peak_rss_mb, rss_mb, stopwatch, summary
from rota import Enqueue, JobContext, Rota
from rota.core.model import NewJob
from rota.store import open_store

ROOT = Path(__file__).resolve().parent.parent
APP = "bench.apps:app"


def worker_command(app: str = APP, log_level: str = "warning") -> list[str]:
    cli = "from rota.cli import main; main()"
    return [sys.executable, "-c", cli, "worker", app, "--log-level", log_level]


@contextmanager
def fresh(config: Config, backend: str, **options: Any) -> Iterator[tuple[Rota, str, str]]:
    """A ``Rota`` (with ``options``) with the bench tasks on its own table prefix, dropped
    afterwards."""
    prefix = f"b{uuid.uuid4().hex[:8]}_"
    url = config.url(backend)
    rota = Rota(url, table_prefix=prefix, **options)

    @rota.task(name="noop", retries=0)
    async def noop(ctx: JobContext) -> None: ...

    @rota.task(name="noop_sync", retries=0)
    def noop_sync(ctx: JobContext) -> None: ...

    @rota.task(name="sleep10", retries=0)
    async def sleep10(ctx: JobContext) -> None: ...

    @rota.task(name="keyed", retries=0)
    async def keyed(ctx: JobContext, key: int) -> None: ...

    @rota.task(name="keyed_limited", retries=0, concurrency_limit=1, concurrency_key="k:{key}")
    async def keyed_limited(ctx: JobContext, key: int) -> None: ...

    rota.jobs()
    try:
        yield rota, url, prefix
    finally:
        schema = rota.store.schema
        with rota.store.engine.begin() as connection:
            schema.metadata.drop_all(connection)
            connection.execute(text(f"DROP TABLE IF EXISTS {prefix}alembic_version"))
        rota.store.engine.dispose()


@contextmanager
def workers(
    url: str,
    prefix: str,
    count: int,
    concurrency: int,
    poll: float = 0.5,
    app: str = APP,
    log: Path | None = None,
) -> Iterator[list[subprocess.Popen[bytes]]]:
    """``log``: the workers log at INFO (the execution log: a line per job started and
    finished) into that file, as a deployment writing its log to disk would."""
    command = worker_command(app, "info" if log else "warning")
    output = open(log, "ab") if log else None  # noqa: SIM115 - closed below
    env = {
        **os.environ,
        "BENCH_URL": url,
        "BENCH_PREFIX": prefix,
        "BENCH_CONCURRENCY": str(concurrency),
        "BENCH_POLL": str(poll),
    }
    processes = [
        subprocess.Popen(command, cwd=ROOT, env=env, stdout=output, stderr=output)
        for _ in range(count)
    ]
    try:
        yield processes
    finally:
        for process in processes:
            process.send_signal(signal.SIGTERM)
        for process in processes:
            try:
                process.wait(timeout=60)
            except subprocess.TimeoutExpired:
                process.kill()
        if output is not None:
            output.close()


def queue_jobs(rota: Rota, task: str, count: int) -> None:
    """``count`` jobs of ``task`` (a multiple of 1,000), queued 1,000 a transaction."""
    for _ in range(0, count, 1_000):
        rota.queue_many([Enqueue(task) for _ in range(1_000)])


def count_finished(rota: Rota, engine: Engine | None = None) -> int:
    jobs = rota.store.schema.jobs
    with (engine or rota.store.engine).connect() as connection:
        query = select(func.count()).where(jobs.c.state.in_(["succeeded", "failed"]))
        return int(connection.execute(query).scalar_one())


def wait_for(rota: Rota, total: int, timeout: float, engine: Engine | None = None) -> None:
    deadline = time.monotonic() + timeout
    while (done := count_finished(rota, engine)) < total:
        if time.monotonic() > deadline:
            raise TimeoutError(f"only {done} of {total} jobs finished")
        time.sleep(0.2)


def throughput(
    config: Config,
    backend: str,
    processes: int,
    concurrency: int,
    task: str = "noop",
    logged: bool = False,
) -> list[Result]:
    """``logged``: the workers write the execution log at INFO to a file (``workers``)."""
    with fresh(config, backend) as (rota, url, prefix):
        queue_jobs(rota, task, config.jobs)
        log = Path(config.workdir) / f"worker-{prefix}.log" if logged else None
        if log is not None:
            log.parent.mkdir(parents=True, exist_ok=True)
        with workers(url, prefix, processes, concurrency, log=log) as running:
            # CPU from the first job finished on: the process's start-up is not a job's cost.
            pids = [process.pid for process in running]
            wait_for(rota, 1, timeout=120)
            done, used = count_finished(rota), cpu_seconds(pids)
            wait_for(rota, config.jobs, timeout=600)
            used = cpu_seconds(pids) - used
            peak = peak_rss_mb(running[0].pid)
        if log is not None:
            log.unlink()
        jobs = rota.store.schema.jobs
        with rota.store.engine.connect() as connection:
            first, last = connection.execute(
                select(func.min(jobs.c.started_at), func.max(jobs.c.finished_at))
            ).one()
    window = (last - first).total_seconds()
    params = {
        "processes": processes,
        "concurrency": concurrency,
        "jobs": config.jobs,
        "window": "first claim to last report, from the jobs table",
        **({"log": "info, to a file"} if logged else {}),
    }
    metric = {"noop": "noop", "noop_sync": "noop_sync", "sleep10": "sleep10ms"}[task]
    results = [
        Result("throughput", "rota", backend, metric, config.jobs / window, "jobs/s", params),
        Result(
            "cpu",
            "rota",
            backend,
            f"{metric}_cpu_per_job",
            used / (config.jobs - done) * 1e6,
            "µs/job",
            params,
        ),
    ]
    if task == "noop":
        results.append(
            Result(
                "footprint",
                "rota",
                backend,
                "peak_rss_busy",
                peak,
                "MiB",
                {"processes": processes, "concurrency": concurrency},
            )
        )
    return results


def latency(config: Config, backend: str, rate: float = 50.0) -> list[Result]:
    seconds = 3 if config.quick else 10
    with fresh(config, backend) as (rota, url, prefix):
        with workers(url, prefix, 1, 10) as running:
            while not rota.store.cluster.workers(rota.clock.now() - timedelta(seconds=30)):
                time.sleep(0.1)
            time.sleep(1.0)
            idle_rss = rss_mb(running[0].pid)
            start = time.monotonic()
            for n in range(int(seconds * rate)):
                pause = start + n / rate - time.monotonic()
                if pause > 0:
                    time.sleep(pause)
                rota.queue("noop")
            wait_for(rota, int(seconds * rate), timeout=60)
        jobs = rota.store.schema.jobs
        with rota.store.engine.connect() as connection:
            rows = connection.execute(select(jobs.c.created_at, jobs.c.started_at)).all()
    lags = [(started - created).total_seconds() * 1000 for created, started in rows]
    figures = summary(lags)
    params = {
        "rate": rate,
        "jobs": len(lags),
        "processes": 1,
        "measure": "enqueue commit time to claim time, from the jobs table",
    }
    return [
        Result("latency", "rota", backend, key, value, "ms", params)
        for key, value in figures.items()
    ] + [Result("footprint", "rota", backend, "rss_idle", idle_rss, "MiB", {"processes": 1})]


def history(config: Config, backend: str) -> list[Result]:
    """Claim and enqueue cost with 10k, then 1M, finished jobs in the table."""
    sizes = (10_000, 100_000) if config.quick else (10_000, 1_000_000)
    results = []
    with fresh(config, backend) as (rota, _, _):
        store = rota.store
        jobs = store.schema.jobs
        now = rota.clock.now()
        store.jobs.enqueue(
            [NewJob(task="noop", payload='{"v":1,"args":[],"kwargs":{}}', run_at=now)], now
        )
        copied = [column for column in jobs.c if column.name != "id"]
        for size in sizes:
            with store.engine.begin() as connection:
                connection.execute(update(jobs).values(state="succeeded", finished_at=now))
                while True:
                    have = connection.execute(select(func.count()).select_from(jobs)).scalar_one()
                    if have >= size:
                        break
                    more = select(*copied).limit(size - have)
                    connection.execute(insert(jobs).from_select(copied, more))
                if backend == "postgres":
                    connection.execute(text(f"ANALYZE {jobs.name}"))
                elif backend == "mariadb":
                    connection.execute(text(f"ANALYZE TABLE {jobs.name}"))
            with stopwatch() as took_enqueue:
                for _ in range(500):
                    rota.queue("noop")
            claims = 0
            with stopwatch() as took_claim:
                while store.jobs.claim(
                    "bench",
                    ["default"],
                    ["noop"],
                    100,
                    rota.clock.now(),
                    rota.clock.now() + timedelta(seconds=60),
                ):
                    claims += 1
            params = {"finished_jobs": size}
            results += [
                Result(
                    "history",
                    "rota",
                    backend,
                    "enqueue_ms",
                    took_enqueue[0] / 500 * 1000,
                    "ms/job",
                    params,
                ),
                Result(
                    "history",
                    "rota",
                    backend,
                    "claim_ms",
                    took_claim[0] / claims * 1000,
                    "ms/claim of 100",
                    params,
                ),
            ]
    return results


def queries_per_job(config: Config, backend: str) -> list[Result]:
    """Statements one worker process sends per job, counted with SQLAlchemy events."""
    import asyncio

    total = 2_000 if config.quick else 10_000
    with fresh(config, backend, concurrency=50) as (rota, url, _):
        rota.queue_many([Enqueue("noop") for _ in range(total)])
        statements = 0

        def count(*_: object) -> None:
            nonlocal statements
            statements += 1

        watcher = open_store(url).engine
        event.listen(rota.store.engine, "before_cursor_execute", count)

        async def run() -> None:
            async with rota:
                await asyncio.to_thread(wait_for, rota, total, 600, watcher)

        asyncio.run(run())
        event.remove(rota.store.engine, "before_cursor_execute", count)
        watcher.dispose()
    params = {"jobs": total, "concurrency": 50, "counted": "every statement, start to stop"}
    return [
        Result(
            "footprint",
            "rota",
            backend,
            "queries_per_job",
            statements / total,
            "queries/job",
            params,
        )
    ]
