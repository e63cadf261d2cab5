"""Sync handlers run between ``close_old_connections()`` calls, as Django requests do, so a
connection the server closed between two jobs is not the next job's (MariaDB).

A worker with one thread runs two jobs, each an ORM query that also reads its connection's id;
between them the test kills that connection from a connection of its own (``KILL CONNECTION``).
Django keeps a thread's connection until something closes it: the control, a plain ``Rota``
whose handlers run without those calls, shows the second job meeting the dead connection.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable

import pymysql
import pytest
from django.db import connections

from rota import Job, JobContext, JobFailed, Rota
from rota.contrib.django import DjangoRota
from tests.django.conftest import on
from tests.django.shop.models import Order
from tests.helpers import sql_store

UNKNOWN_THREAD = 1094
"""The session had ended already (``CONN_MAX_AGE = 0``: closed at the end of the job)."""
CONN_SETTINGS: dict[str, dict[str, object]] = {
    "closed after each job": {"CONN_MAX_AGE": 0},
    "kept, checked before use": {"CONN_MAX_AGE": 600, "CONN_HEALTH_CHECKS": True},
}


def register(rota: Rota, alias: str) -> Callable[..., int]:
    @rota.task(retries=0)
    def connection_id(ctx: JobContext) -> int:
        assert Order.objects.using(alias).count() == 0
        with connections[alias].cursor() as cursor:
            cursor.execute("SELECT CONNECTION_ID()")
            return int(cursor.fetchone()[0])

    return connection_id


def kill(alias: str, session: int) -> bool:
    """``KILL CONNECTION`` from a connection of the test's own; ``False`` if it had closed."""
    settings = connections[alias].settings_dict
    killer = pymysql.connect(
        host=settings["HOST"], port=int(settings["PORT"]), user=settings["USER"]
    )
    try:
        with killer.cursor() as cursor:
            cursor.execute(f"KILL CONNECTION {int(session)}")
        return True
    except pymysql.err.OperationalError as error:
        if error.args[0] != UNKNOWN_THREAD:
            raise
        return False
    finally:
        killer.close()


def two_jobs(rota: Rota, task: Callable[..., int], alias: str) -> tuple[Job, Job, bool]:
    """The worker's one thread runs a job, its connection is killed, then it runs another;
    whether the kill found the connection still open."""

    async def scenario() -> tuple[int, int, bool]:
        await rota.start(concurrency=1)
        try:
            first = await rota.aqueue(task)
            session = await rota.aresult(first, timeout=10)
            killed = await asyncio.to_thread(kill, alias, session)
            second = await rota.aqueue(task)
            with contextlib.suppress(JobFailed):  # the control's
                await rota.aresult(second, timeout=10)
            return first, second, killed
        finally:
            await rota.stop()

    first, second, killed = asyncio.run(scenario())
    return rota.job(first), rota.job(second), killed


@pytest.fixture
def conn_settings(
    request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch
) -> dict[str, object]:
    """``CONN_MAX_AGE`` and ``CONN_HEALTH_CHECKS`` of the ``mariadb`` alias, for every thread's
    connection (they share the alias's settings)."""
    chosen = CONN_SETTINGS[request.param]
    for key, value in chosen.items():
        monkeypatch.setitem(connections["mariadb"].settings_dict, key, value)
    return chosen


@pytest.mark.parametrize("conn_settings", list(CONN_SETTINGS), indirect=True)
@pytest.mark.parametrize("alias", on("mariadb"))
def test_the_next_job_gets_a_live_connection(
    make_rota: Callable[..., DjangoRota],
    alias: str,
    conn_settings: dict[str, object],
) -> None:
    rota = make_rota(alias)
    first, second, killed = two_jobs(rota, register(rota, alias), alias)
    assert (first.state.value, second.state.value) == ("succeeded", "succeeded"), second.errors
    assert second.result != first.result  # a new connection
    if conn_settings["CONN_MAX_AGE"]:
        assert killed  # kept for the next job, found dead by its check, replaced


@pytest.mark.parametrize("alias", on("mariadb"))
def test_without_the_calls_the_next_job_meets_the_dead_connection(
    make_rota: Callable[..., DjangoRota], alias: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(connections[alias].settings_dict, "CONN_MAX_AGE", 600)
    source = make_rota(alias)  # the database and the tables, through a Rota that knows no Django
    plain = Rota(source.config.url, table_prefix=source.config.table_prefix, poll_interval=0.05)
    try:
        first, second, killed = two_jobs(plain, register(plain, alias), alias)
    finally:
        sql_store(plain).engine.dispose()
    assert killed
    assert first.state.value == "succeeded"
    assert second.state.value == "failed"
    assert second.errors[-1].type.endswith("OperationalError"), second.errors[-1]
