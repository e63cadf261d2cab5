"""A migrated store per backend, seen only as the ``Store`` protocol."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from rota.store import ScheduleStore, Store, open_store
from tests.conftest import Database


@pytest.fixture
def store(db: Database) -> Iterator[Store]:
    opened = open_store(db.url, db.prefix)
    opened.migrate()
    yield opened
    opened.dispose()


@pytest.fixture
def schedules(store: Store) -> ScheduleStore:
    return store.schedules
