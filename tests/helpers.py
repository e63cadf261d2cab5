"""Waiting on observable state instead of sleeping for a guessed time; replicas in lockstep;
the SQL store below the protocol."""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from datetime import timedelta
from typing import Any

import pytest
from sqlalchemy import event
from sqlalchemy.engine import make_url

from rota import Rota
from rota.runtime.host.process import scheduler_settings
from rota.runtime.worker import Worker, WorkerContext
from rota.runtime.worker.executor import Executor
from rota.runtime.worker.scheduler import fire_due
from rota.runtime.worker.settings import WorkerSettings
from rota.store.base import Store
from rota.store.sql import SqlStore
from rota.testing import FakeClock


def sql_store(rota: Rota) -> SqlStore:
    """The SQL store behind ``rota``, for a test that reaches below the ``Store`` protocol.

    Tests take only its ``engine``, ``schema`` and ``jobs.candidates`` through here, so that this
    is the one place to change when those move.
    """
    store = rota.store
    assert isinstance(store, SqlStore), f"{type(store).__name__} is not the SQL store"
    return store


def through(url: str, driver: str | None) -> str:
    """``url`` on the MySQL ``driver`` named (``mysqldb``: mysqlclient, Django's MySQL driver);
    as it is for ``None`` (rota's default, PyMySQL) or a URL of another backend."""
    parsed = make_url(url)
    if driver is None or parsed.get_backend_name() != "mysql":
        return url
    return parsed.set(drivername=f"mysql+{driver}").render_as_string(False)


MYSQL8_SQL_MODE = (
    "ONLY_FULL_GROUP_BY,STRICT_TRANS_TABLES,NO_ZERO_IN_DATE,NO_ZERO_DATE,"
    "ERROR_FOR_DIVISION_BY_ZERO,NO_ENGINE_SUBSTITUTION"
)
"""MySQL 8.0's and 8.4's default ``sql_mode`` (MariaDB 10.11's lacks the first three)."""


def in_mysql8_mode(url: str) -> str:
    """``url`` whose MySQL or MariaDB sessions run in ``MYSQL8_SQL_MODE``, set by the driver's
    ``init_command`` as each connection opens (both drivers take it from the URL's query), so
    that rota does not know; a URL of another backend as it is."""
    parsed = make_url(url)
    if parsed.get_backend_name() not in ("mysql", "mariadb"):
        return url
    command = f"SET SESSION sql_mode = '{MYSQL8_SQL_MODE}'"
    return parsed.update_query_dict({"init_command": command}).render_as_string(False)


async def eventually(
    check: Callable[[], object], timeout: float = 10.0, every: float = 0.02
) -> None:
    """Return once ``check()`` is truthy; fail the test after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"condition not met within {timeout} s: {check}")
        await asyncio.sleep(every)


@contextlib.contextmanager
def migrated(url: str, table_prefix: str = "rota_") -> Iterator[Rota]:
    """A ``Rota`` whose schema is applied before any worker process is started against it,
    its connections closed at the end."""
    rota = Rota(url, table_prefix=table_prefix)
    rota.jobs()
    try:
        yield rota
    finally:
        sql_store(rota).engine.dispose()


def wait_until(
    check: Callable[[], object],
    timeout: float = 10.0,
    every: float = 0.05,
    ignoring: tuple[type[Exception], ...] = (),
) -> None:
    """``eventually`` for code outside an event loop (subprocess tests); a check that raises
    one of ``ignoring`` (a server not up yet, a database file locked) counts as not met."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            if check():
                return
        except ignoring:
            pass
        if time.monotonic() > deadline:
            raise AssertionError(f"condition not met within {timeout} s: {check}")
        time.sleep(every)


def fire_in_lockstep(
    instances: Sequence[Rota], clock: FakeClock, steps: int, step: timedelta
) -> None:
    """Each of ``steps`` times: advance ``clock``, then let every instance's scheduler fire
    the due ticks at once, each in its own thread and by its own clock, as replicas would."""
    barrier = threading.Barrier(len(instances))
    errors: list[BaseException] = []

    def fire(instance: Rota) -> None:
        try:
            for _ in range(steps):
                barrier.wait()
                if instance is instances[0]:
                    clock.advance(step)
                barrier.wait()
                fire_due(
                    instance.store.schedules,
                    instance.registry,
                    scheduler_settings(instance.config),
                    instance.events,
                    instance.clock.now(),
                )
        except BaseException as error:
            errors.append(error)
            barrier.abort()

    threads = [threading.Thread(target=fire, args=(instance,)) for instance in instances]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []


def hand_built(
    rota: Rota, executor: Executor, settings: WorkerSettings, store: Store | None = None
) -> Worker:
    """A worker of ``rota``'s process built by hand (a test's own executor, settings or store),
    wired as ``Rota.start()`` wires one; its database calls run in threads."""
    announcer = rota._host.announcer
    context = WorkerContext(
        store or rota.store, executor, settings, rota.events, announcer, asyncio.to_thread
    )
    return Worker(context)


def jobs_statements(
    store: SqlStore, call: Callable[[], object], tables: Sequence[str] = ()
) -> list[tuple[str, Any]]:
    """The statements ``call`` sends that read the jobs table (or any of ``tables``), with
    their parameters."""
    sent: list[tuple[str, Any]] = []
    read = tables or (store.schema.jobs.name,)

    def record(_conn: Any, _cursor: Any, statement: str, parameters: Any, *_: Any) -> None:
        if any(table in statement for table in read):
            sent.append((statement, parameters))

    event.listen(store.engine, "before_cursor_execute", record)
    try:
        call()
    finally:
        event.remove(store.engine, "before_cursor_execute", record)
    assert sent
    return sent


class RoundTrips:
    """What the driver sends to the server, counted below SQLAlchemy: every statement, and
    what the driver sends of its own accord (``COMMIT``, ``ROLLBACK``, psycopg's ``BEGIN``)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, backend: str) -> None:
        """``backend``: ``mariadb`` (PyMySQL) or ``postgres`` (psycopg)."""
        self.sent: list[str] = []
        if backend == "mariadb":
            import pymysql.connections

            self._count(monkeypatch, pymysql.connections.Connection, "_execute_command", 1)
        else:
            import psycopg

            self._count(monkeypatch, psycopg.Connection, "_exec_command", 0)
            self._count(monkeypatch, psycopg.Cursor, "execute", 0)

    def _count(self, monkeypatch: pytest.MonkeyPatch, cls: type, name: str, arg: int) -> None:
        real = getattr(cls, name)

        def counted(this: object, *args: Any, **kwargs: Any) -> Any:
            sent = args[arg]
            text_sent = sent.decode() if isinstance(sent, bytes) else str(sent)
            self.sent.append(text_sent.split()[0].upper())
            return real(this, *args, **kwargs)

        monkeypatch.setattr(cls, name, counted)
