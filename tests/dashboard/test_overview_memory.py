"""The dashboard's memory does not grow with the jobs' payloads (issue 15, finding 2).

Each page's peak Python allocation (``tracemalloc`` around one ``GET``) with 1,000 jobs of
100 KB of arguments must stay within 20 MB of the same page over 1,000 jobs of 100 bytes: a
page that loaded whole rows would hold about 100 MB more.  The jobs are finished (succeeded
and failed, for the chart), pending, running under a live worker, and one enqueued by a
schedule, so that every part of every page has rows to read.
"""

from __future__ import annotations

import tracemalloc
import warnings
from datetime import timedelta

import pytest

from rota import JobContext, Rota
from rota.core.model import WorkerInfo
from rota.dashboard import create_app
from rota.enqueue import Enqueue
from tests.conftest import Database
from tests.helpers import sql_store

with warnings.catch_warnings():
    warnings.filterwarnings("ignore", message=".*install `httpx2`", category=Warning)
    from starlette.testclient import TestClient

pytestmark = pytest.mark.slow

JOBS = 1_000
FINISHED, RUNNING = 800, 50
BIG, SMALL = 100_000, 100
MARGIN = 20 * 2**20
PAGES = ("/", "/jobs", f"/jobs?page={JOBS // 50}", "/schedules", "/workers")


def seeded(db: Database, name: str, size: int) -> Rota:
    """A ``Rota`` on its own tables holding ``JOBS`` jobs whose argument has ``size`` bytes."""
    rota = Rota(db.url, table_prefix=f"{db.prefix}{name}_", connect_timeout=5)
    blob = "x" * size

    @rota.task(retries=0)
    def work(ctx: JobContext, blob: str, fail: bool) -> None:
        if fail:
            raise RuntimeError("failed on purpose")

    for start in range(0, FINISHED, 100):
        rota.queue_many(Enqueue(work, blob, n % 100 == 0) for n in range(start, start + 100))
    rota.schedule("0 3 * * *", work, name="nightly", args=[blob, False])
    rota.run_now("nightly")
    rota.drain()
    rota.queue_many(Enqueue(work, blob, False) for _ in range(JOBS - FINISHED - 1))
    now = rota.clock.now()
    rota.store.cluster.register_worker(
        WorkerInfo(
            id="box:1",
            host="box",
            pid=1,
            queues=("default",),
            tasks=("work",),
            concurrency=RUNNING,
            started_at=now,
            heartbeat_at=now,
        )
    )
    rota.store.jobs.claim("box:1", ["default"], ["work"], RUNNING, now, now + timedelta(minutes=5))
    assert rota.counts().total == JOBS
    return rota


def peak(client: TestClient, path: str) -> int:
    """The most Python memory allocated at once while serving ``path``, in bytes."""
    client.get(path)  # templates compiled, statements cached: not what is measured
    tracemalloc.start()
    try:
        response = client.get(path)
        _, top = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert response.status_code == 200, response.text
    return top


def test_page_memory_does_not_depend_on_payloads(db: Database) -> None:
    """The figures are printed: ``pytest -rP`` shows them."""
    made: list[Rota] = []
    try:
        peaks: dict[int, dict[str, int]] = {}
        for size in (SMALL, BIG):
            rota = seeded(db, f"p{size}", size)
            made.append(rota)
            client = TestClient(create_app(rota), base_url="http://localhost")
            peaks[size] = {path: peak(client, path) for path in PAGES}
            failed = FINISHED // 100
            chart = f"{FINISHED - failed + 1} succeeded, {failed} failed"  # +1: the schedule's
            assert chart in client.get("/").text
    finally:
        for rota in made:
            sql_store(rota).engine.dispose()
    for path in PAGES:
        small, big = (peaks[size][path] / 2**20 for size in (SMALL, BIG))
        print(f"{db.backend} {path}: {small:.1f} MB with 100 B, {big:.1f} MB with 100 KB")
    for path in PAGES:
        grown = peaks[BIG][path] - peaks[SMALL][path]
        assert grown < MARGIN, f"{path} peaks {grown / 2**20:.0f} MB higher with big payloads"
