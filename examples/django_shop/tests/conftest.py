"""The shop's test set-up: the project's Rota on a fake clock, and a browser of the ASGI app.

The Rota is the project's own (``from rota.contrib.django import rota``), the one the views
and tasks use; it is built at its first use, in the first test, on the test database, with
the clock this module gives it. Tests run with ``transaction=True``: rota's own connections
must see what Django's committed. Each test starts with ``rota.drain()``, so no job a former
test left due counts in its own.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import httpx
import pytest
from asgiref.sync import async_to_sync
from django.test import override_settings

from rota.contrib.django import DjangoRota, get_rota
from rota.testing import FakeClock

CLOCK = FakeClock(datetime.now(timezone.utc).replace(microsecond=0))


@pytest.fixture(scope="session")
def django_db_modify_db_settings(tmp_path_factory: pytest.TempPathFactory) -> None:
    """The test database: on SQLite a file (Django's default is in memory, which rota's own
    connections could not open), in a directory of this run's; on a server, named after this
    process, so that two test runs sharing the server never drop each other's."""
    from django.conf import settings

    default = settings.DATABASES["default"]
    if default["ENGINE"].endswith("sqlite3"):
        name = str(Path(tmp_path_factory.mktemp("db")) / "test.sqlite3")
    else:
        name = f"test_shop_{os.getpid()}"
    default.setdefault("TEST", {})["NAME"] = name


@pytest.fixture(scope="session", autouse=True)
def _test_settings() -> Iterator[None]:
    from django.conf import settings

    fast = ["django.contrib.auth.hashers.MD5PasswordHasher"]  # tests' passwords need no cost
    with override_settings(ROTA={**settings.ROTA, "CLOCK": CLOCK}, PASSWORD_HASHERS=fast):
        yield


@pytest.fixture
def clock() -> FakeClock:
    return CLOCK


@pytest.fixture(scope="session")
def _rota_connections(django_db_setup: None) -> Iterator[None]:
    """Closes the Rota's own connections before the test database is dropped (PostgreSQL
    refuses to drop a database others are connected to)."""
    yield
    get_rota().store.dispose()


@pytest.fixture
def rota(_rota_connections: None, transactional_db: None) -> DjangoRota:
    """The project's Rota, with nothing left due."""
    project = get_rota()
    project.drain()
    return project


class Browser:
    """Requests to the project's ASGI application (``shop_project.asgi``), with a cookie jar,
    as a browser sends them (Django's CSRF checks included).

    Each request runs through ``async_to_sync``, as Django's own async test client runs: the
    ORM calls the app makes in threads (``sync_to_async``) come back to this thread, so they
    see the test database's connection."""

    def __init__(self) -> None:
        from shop_project.asgi import application

        self.transport = httpx.ASGITransport(app=application)
        self.cookies = httpx.Cookies()

    def request(self, method: str, path: str, **options: Any) -> httpx.Response:
        async def send() -> httpx.Response:
            async with httpx.AsyncClient(
                transport=self.transport, base_url="http://testserver", cookies=self.cookies
            ) as client:
                response = await client.request(method, path, **options)
                self.cookies.update(client.cookies)
                return response

        return async_to_sync(send)()

    def get(self, path: str, **options: Any) -> httpx.Response:
        return self.request("GET", path, **options)

    def post(self, path: str, **options: Any) -> httpx.Response:
        """A POST with Django's CSRF token, from the cookie a page with a form has set."""
        token = {"X-CSRFToken": self.cookies.get("csrftoken", "")}
        return self.request("POST", path, headers=token, **options)


@pytest.fixture
def browser() -> Browser:
    return Browser()
