"""pytest-django on the test project, for the tests of this directory only.

The settings are set up when this directory is collected, not for the whole suite: the rest of
it never imports Django. Each test that takes ``make_rota`` gets Rotas with a table prefix of
their own, their tables dropped after it. ``on(...)`` parametrises a test over the databases it
names, each with the ``django_db`` mark pytest-django creates the test database for; outside CI
an unreachable server skips its tests instead (its test database is then never asked for).
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import django
import pytest

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "tests.django.settings")
django.setup()

from rota.contrib.django import DjangoRota  # noqa: E402  (needs the settings)
from rota.contrib.django.project import BUILT  # noqa: E402
from tests.conftest import _server_error, drop_prefixed_tables  # noqa: E402
from tests.requirements import in_ci  # noqa: E402

ALIASES = {"sqlite": "default", "mariadb": "mariadb", "postgres": "postgres"}


def on(*backends: str) -> list[Any]:
    """``alias`` parameters for ``backends``, each marked for its test database."""
    params = []
    for backend in backends:
        alias = ALIASES[backend]
        error = None if backend == "sqlite" else _server_error(backend)
        if error is not None and not in_ci():
            marks: list[Any] = [pytest.mark.skip(reason=error)]
        else:
            marks = [pytest.mark.django_db(transaction=True, databases=[alias])]
        params.append(pytest.param(alias, marks=marks, id=backend))
    return params


def prefix() -> str:
    return f"t{uuid.uuid4().hex[:10]}_"


@pytest.fixture
def make_rota() -> Iterator[Callable[..., DjangoRota]]:
    """``make_rota(alias, **setting)``: a ``DjangoRota`` on that database, as ``ROTA`` would
    configure it (keys in upper case)."""
    made: list[DjangoRota] = []

    def make(alias: str, **setting: Any) -> DjangoRota:
        chosen = {"DATABASE": alias, "TABLE_PREFIX": prefix(), "POLL_INTERVAL": 0.05}
        rota = DjangoRota({**chosen, "CONNECT_TIMEOUT": 5, **setting})
        made.append(rota)
        return rota

    yield make
    for rota in made:
        if rota.__dict__.get("_state") == BUILT:  # the tables exist only if it was used
            rota.store.dispose()
            drop_prefixed_tables(rota.config.url, rota.config.table_prefix)
