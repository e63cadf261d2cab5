"""What an idle worker costs the database, and how soon it still starts a job queued elsewhere.

One worker (``Rota.start()`` in this process, poll 0.5 s, one cron schedule, nothing due) is
left idle; the statements and commits its engine sends are counted for ``seconds``.  Then
another ``Rota`` on the same database (its own engine, so no local wake-up) queues one job at a
time at random moments, and the time from that enqueue's commit to the claim (``started_at``)
is taken per job: the issue's target is p95 within the poll interval + 50 ms.

    python -m bench.idle --backends mariadb,postgres
"""

from __future__ import annotations

import argparse
import asyncio
import random
import sys
import uuid
from datetime import datetime, timezone
from typing import Any

from sqlalchemy import event, text

from bench.common import Config, Result, percentile
from rota import JobContext, Rota

POLL = 0.5


def idle(config: Config, backend: str, seconds: float = 20.0, jobs: int = 30) -> list[Result]:
    prefix = f"i{uuid.uuid4().hex[:8]}_"
    url = config.url(backend)
    worker = Rota(url, table_prefix=prefix, poll_interval=POLL)
    other = Rota(url, table_prefix=prefix)

    @worker.task(cron="0 3 * * *", retries=0)
    async def nightly(ctx: JobContext) -> None: ...

    @worker.task(retries=0)
    async def noop(ctx: JobContext) -> None: ...

    sent = {"statements": 0, "commits": 0}
    engine = worker.store.engine

    def statement(*_: Any) -> None:
        sent["statements"] += 1

    def commit(*_: Any) -> None:
        sent["commits"] += 1

    event.listen(engine, "before_cursor_execute", statement)
    event.listen(engine, "commit", commit)
    latencies: list[float] = []
    counted: dict[str, int] = {}

    async def scenario() -> None:
        async with worker:
            await asyncio.sleep(3)
            sent.update(statements=0, commits=0)
            await asyncio.sleep(seconds)
            counted.update(sent)  # the statements of the idle window alone
            for _ in range(jobs):
                await asyncio.sleep(random.uniform(0.2, 1.3))
                queued = datetime.now(timezone.utc)
                job_id = await asyncio.to_thread(other.queue, "noop")
                started = await claimed_at(other, job_id)
                latencies.append((started - queued).total_seconds())

    try:
        asyncio.run(scenario())
    finally:
        with engine.begin() as connection:
            worker.store.schema.metadata.drop_all(connection)
            connection.execute(text(f"DROP TABLE IF EXISTS {prefix}alembic_version"))
        engine.dispose()
        other.store.engine.dispose()
    params = {"poll": POLL, "seconds": seconds, "jobs": jobs}
    return [
        Result(
            "idle",
            "rota",
            backend,
            "statements_per_s",
            counted["statements"] / seconds,
            "/s",
            params,
        ),
        Result(
            "idle", "rota", backend, "commits_per_s", counted["commits"] / seconds, "/s", params
        ),
        Result(
            "idle", "rota", backend, "start_p50", percentile(latencies, 0.5) * 1000, "ms", params
        ),
        Result(
            "idle", "rota", backend, "start_p95", percentile(latencies, 0.95) * 1000, "ms", params
        ),
    ]


async def claimed_at(rota: Rota, job_id: int) -> datetime:
    """When a worker claimed the job (read every 10 ms, for up to 30 s)."""
    for _ in range(3_000):
        started = (await asyncio.to_thread(rota.job, job_id)).started_at
        if started is not None:
            return started
        await asyncio.sleep(0.01)
    raise TimeoutError(f"job {job_id} was not claimed within 30 s")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backends", default="mariadb,postgres")
    options = parser.parse_args()
    config = Config(backends=tuple(options.backends.split(",")))
    for backend in config.backends:
        for result in idle(config, backend):
            print(f"{backend} {result.metric}: {result.value:,.2f} {result.unit}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
