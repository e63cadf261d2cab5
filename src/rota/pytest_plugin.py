"""The pytest plugin (entry point ``pytest11: rota``): fixtures for testing code that uses rota.

Installed with rota, pytest loads it in every run (``-p rota`` where plugin autoloading is
off).  Each test gets, on request:

``rota_clock``
    A ``FakeClock`` at ``ROTA_START`` (2026-01-01 00:00 UTC): time moves only by
    ``rota_clock.advance(...)``, so retries and schedules are tested without sleeping.  A
    ``conftest.py`` fixture of the same name replaces it (with a ``VirtualClock``, say).
``rota_url``
    The database: a SQLite file in the test's ``tmp_path``, unless a URL is given by
    ``--rota-url``, the ini option ``rota_url`` or the variable ``ROTA_TEST_URL`` (the first
    one set), to test on the server the application runs on.
``rota_prefix``
    The test's own table prefix (``rota`` and 8 hex digits): tests sharing a database, in
    parallel too, never see each other's rows; its tables are dropped after the test.
``make_rota``
    ``make_rota(tasks_from=None, **settings)``: a new ``Rota`` on that URL and prefix with that
    clock (``settings`` as ``Rota(...)`` takes them, which may override both); its connections
    are closed after the test.  ``tasks_from`` copies another ``Rota``'s tasks: an
    application's module-level ``Rota`` is bound to its own database when imported, so a test
    runs its tasks (by handler or by name) on the test's instance instead.
``rota``
    ``make_rota()``.  A ``conftest.py`` fixture ``rota`` returning
    ``make_rota(tasks_from=myservice.jobs.rota)`` gives every test the application's tasks.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Protocol

import pytest

from rota.app import Rota
from rota.store import open_store
from rota.testing import FakeClock

ROTA_START = datetime(2026, 1, 1, tzinfo=timezone.utc)
"""Where ``rota_clock`` starts: fixed, so that a test's times and schedules are the same in
every run."""
URL_VARIABLE = "ROTA_TEST_URL"


class MakeRota(Protocol):
    """The type of the ``make_rota`` fixture, for annotating tests that take it."""

    def __call__(self, *, tasks_from: Rota | None = None, **settings: Any) -> Rota: ...


def pytest_addoption(parser: pytest.Parser) -> None:
    described = f"database URL of rota's fixtures (else ${URL_VARIABLE}, else SQLite in tmp_path)"
    parser.getgroup("rota").addoption("--rota-url", metavar="URL", help=described)
    parser.addini("rota_url", described)


@pytest.fixture
def rota_clock() -> FakeClock:
    return FakeClock(ROTA_START)


@pytest.fixture
def rota_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    option, ini = request.config.getoption("rota_url"), request.config.getini("rota_url")
    given = option or ini or os.environ.get(URL_VARIABLE)
    return str(given) if given else f"sqlite:///{tmp_path / 'rota.db'}"


@pytest.fixture
def rota_prefix(rota_url: str) -> Iterator[str]:
    prefix = f"rota{uuid.uuid4().hex[:8]}_"
    yield prefix
    store = open_store(rota_url, prefix)
    try:
        store.drop_schema()
    finally:
        store.dispose()


@pytest.fixture
def make_rota(rota_url: str, rota_prefix: str, rota_clock: FakeClock) -> Iterator[MakeRota]:
    made: list[Rota] = []

    def make(*, tasks_from: Rota | None = None, **settings: Any) -> Rota:
        settings.setdefault("clock", rota_clock)
        settings.setdefault("table_prefix", rota_prefix)
        instance = Rota(rota_url, **settings)
        made.append(instance)
        for definition in tasks_from.registry if tasks_from is not None else ():
            instance.define_task(definition)
        return instance

    yield make
    for instance in made:
        instance.store.dispose()


@pytest.fixture
def rota(make_rota: MakeRota) -> Rota:
    return make_rota()
