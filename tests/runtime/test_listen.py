"""PostgreSQL announces new jobs: a worker starts a job queued by another process as soon as
it commits, not at its next poll, and keeps doing so after its listening connection is lost.

The worker's clock is a ``VirtualClock`` that never moves, so no poll ever comes due: a job
started here was heard, not polled for.  MySQL and SQLite announce nothing (workers poll).
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Iterator
from datetime import datetime, timezone

import psycopg
import pytest
from sqlalchemy import create_engine, event, text

from rota import JobContext, Rota
from rota.core.model import NewJob
from rota.errors import TransientStoreError
from rota.testing import VirtualClock
from tests.conftest import drop_prefixed_tables, server_url
from tests.helpers import eventually, sql_store

START = datetime(2026, 3, 2, 9, 0, 30, tzinfo=timezone.utc)
PAYLOAD = '{"v":1,"args":[],"kwargs":{}}'


@pytest.fixture
def prefix() -> Iterator[str]:
    prefix = f"t{uuid.uuid4().hex[:10]}_"
    yield prefix
    drop_prefixed_tables(server_url("postgres"), prefix)


def listeners(prefix: str) -> list[int]:
    """The server processes of the connections listening on ``prefix``'s channel."""
    engine = create_engine(server_url("postgres").replace("postgresql:", "postgresql+psycopg:"))
    try:
        with engine.connect() as connection:
            query = "SELECT pid FROM pg_stat_activity WHERE query = :listen"
            found = connection.execute(text(query), {"listen": f'LISTEN "{prefix}jobs"'})
            return list(found.scalars())
    finally:
        engine.dispose()


def terminate(pid: int) -> None:
    engine = create_engine(server_url("postgres").replace("postgresql:", "postgresql+psycopg:"))
    try:
        with engine.connect() as connection:
            connection.execute(text("SELECT pg_terminate_backend(:pid)"), {"pid": pid})
    finally:
        engine.dispose()


def test_a_job_queued_elsewhere_starts_without_a_poll_even_after_the_listener_is_cut(
    prefix: str,
) -> None:
    clock = VirtualClock(START)
    url = server_url("postgres")
    worker = Rota(url, table_prefix=prefix, clock=clock, poll_interval=10, lease_seconds=60)
    other = Rota(url, table_prefix=prefix, clock=clock)
    ran: list[int] = []

    @worker.task
    def work(ctx: JobContext) -> None:
        ran.append(ctx.job_id)

    def queue_elsewhere() -> int:
        (job_id,) = other.store.jobs.enqueue([NewJob("work", PAYLOAD, run_at=START)], START)
        return job_id

    async def scenario() -> None:
        async with worker:
            await eventually(lambda: len(listeners(prefix)) == 1)
            first = queue_elsewhere()
            await eventually(lambda: ran == [first], timeout=5)
            (listening,) = listeners(prefix)
            terminate(listening)
            await eventually(lambda: listeners(prefix) not in ([], [listening]), timeout=10)
            second = queue_elsewhere()
            await eventually(lambda: ran == [first, second], timeout=5)
        assert listeners(prefix) == [], "the listening connection closes with the worker"

    try:
        asyncio.run(scenario())
    finally:
        for rota in (worker, other):
            rota.store.dispose()


@pytest.mark.parametrize("backend", ["sqlite", "mariadb"])
def test_other_backends_announce_nothing(backend: str, tmp_path: object) -> None:
    url = f"sqlite:///{tmp_path}/rota.db" if backend == "sqlite" else server_url(backend)
    rota = Rota(url, table_prefix=f"t{uuid.uuid4().hex[:10]}_")
    try:
        assert rota.store.listen_for_jobs() is None
    finally:
        rota.store.dispose()


def test_a_driver_error_while_reconnecting_is_a_store_error(prefix: str) -> None:
    """A server restarting answers the connection attempt and then fails its first statements:
    psycopg's own error, which the pool's raw connection does not wrap, is still the store's
    ``TransientStoreError``, logged by the listen loop as a warning without a traceback."""
    rota = Rota(server_url("postgres"), table_prefix=prefix)

    def shutting_down(dbapi_connection: object, record: object) -> None:
        raise psycopg.OperationalError("the database system is shutting down")

    try:
        rota.store.dispose()
        event.listen(sql_store(rota).engine, "connect", shutting_down)
        with pytest.raises(TransientStoreError, match="shutting down"):
            rota.store.listen_for_jobs()
    finally:
        rota.store.dispose()
