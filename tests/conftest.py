"""Fixtures: every test that takes ``db`` runs on SQLite, MariaDB and PostgreSQL.

MariaDB and PostgreSQL come from ``ROTA_TEST_MYSQL_URL`` / ``ROTA_TEST_POSTGRES_URL`` (default:
the local servers).  Each test gets its own table prefix, so tests never see each other's rows.
Outside CI an unreachable server skips its tests; with ``CI=true`` it fails them
(``tests.requirements``).
``--backends sqlite`` (comma-separated) chooses the databases: the others' tests are deselected.
A test or module marked ``sqlite_only`` (see pyproject.toml) gets ``db`` on SQLite alone: its
other backends are never generated, so they show as neither skipped nor deselected.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import datetime, timezone
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from sqlalchemy import create_engine, inspect, text
from sqlalchemy.engine import Engine

from rota import Rota
from rota.store.schema import notify_function
from rota.store.urls import normalise_url
from rota.testing import FakeClock
from tests.helpers import sql_store
from tests.requirements import require

if TYPE_CHECKING:
    from tests.workers import Workers

SERVERS = {
    "mariadb": ("ROTA_TEST_MYSQL_URL", "mysql://root@127.0.0.1:3306/test"),
    "postgres": ("ROTA_TEST_POSTGRES_URL", "postgresql://postgres@127.0.0.1:5432/test"),
}
SERVER_PACKAGES = {"mariadb": "mariadb-server", "postgres": "postgresql"}
BACKENDS = ("sqlite", *SERVERS)
START = datetime(2026, 3, 2, 9, 0, tzinfo=timezone.utc)
# pytester runs pytest inside a test: the tests of rota's pytest plugin use it.
pytest_plugins = ("pytester",)
_chosen: set[str] = set(BACKENDS)


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--backends",
        default=",".join(BACKENDS),
        help="comma-separated databases to test on (default: all of them)",
    )


def pytest_configure(config: pytest.Config) -> None:
    chosen = {name.strip() for name in config.getoption("backends").split(",") if name.strip()}
    if not chosen or chosen - set(BACKENDS):
        raise pytest.UsageError(f"--backends takes some of {', '.join(BACKENDS)}")
    _chosen.clear()
    _chosen.update(chosen)


def chosen(backend: str) -> bool:
    """Whether ``--backends`` includes ``backend``."""
    return backend in _chosen


def _backends_used(item: pytest.Item) -> set[str]:
    """The databases a test runs on, as its fixtures, parameters and their ids name them."""
    used = {name for name in SERVERS if name in getattr(item, "fixturenames", ())}
    callspec = getattr(item, "callspec", None)
    if callspec is not None:
        used.update(value for value in callspec.params.values() if value in BACKENDS)
        used.update(part for part in callspec.id.split("-") if part in BACKENDS)
    return used


def _argnames(mark: pytest.Mark) -> list[str]:
    names = mark.args[0] if mark.args else mark.kwargs["argnames"]
    return [name.strip() for name in names.split(",")] if isinstance(names, str) else list(names)


@pytest.hookimpl(tryfirst=True)
def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """Under ``sqlite_only``, parametrise ``db`` with SQLite alone, as an explicit
    ``parametrize("db", ["sqlite"], indirect=True)`` would (one the test makes itself wins)."""
    if metafunc.definition.get_closest_marker("sqlite_only") is None:
        return
    servers = [name for name in ("server_db", *SERVERS) if name in metafunc.fixturenames]
    if servers:
        raise pytest.UsageError(
            f"{metafunc.definition.nodeid} is marked sqlite_only but asks for {servers[0]}"
        )
    explicit = any(
        "db" in _argnames(mark) for mark in metafunc.definition.iter_markers("parametrize")
    )
    if "db" in metafunc.fixturenames and not explicit:
        metafunc.definition.add_marker(pytest.mark.parametrize("db", ["sqlite"], indirect=True))


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    left_out = {item for item in items if not _backends_used(item) <= _chosen}
    if left_out:
        config.hook.pytest_deselected(items=[item for item in items if item in left_out])
        items[:] = [item for item in items if item not in left_out]
    # The files with slow tests first: pytest-xdist hands out whole files in this order, and a
    # long file dealt last would leave the other workers idle while it runs.
    slow_files = {item.path for item in items if item.get_closest_marker("slow") is not None}
    items.sort(key=lambda item: item.path not in slow_files)


@dataclass
class Database:
    backend: str
    url: str
    prefix: str

    def engine(self) -> Engine:
        """The test's own connections; on SQLite they wait for busy workers as rota's do."""
        options = {"connect_args": {"timeout": 30}} if self.backend == "sqlite" else {}
        return create_engine(normalise_url(self.url), **options)

    def table(self, name: str) -> str:
        return f"{self.prefix}{name}"


@cache
def _server_error(backend: str) -> str | None:
    variable, default = SERVERS[backend]
    url = os.environ.get(variable, default)
    engine = create_engine(normalise_url(url), connect_args={"connect_timeout": 3})
    try:
        with engine.connect() as connection:
            connection.execute(text("SELECT 1"))
        return None
    except Exception as exc:
        return (
            f"{backend} is not reachable at {url} ({type(exc).__name__}): start it (apt-get "
            f"install {SERVER_PACKAGES[backend]}), or point {variable} at a server"
        )
    finally:
        engine.dispose()


def server_url(backend: str) -> str:
    if not chosen(backend):
        pytest.skip(f"{backend} is not among --backends")
    require(_server_error(backend))
    variable, default = SERVERS[backend]
    return os.environ.get(variable, default)


def drop_prefixed_tables(url: str, prefix: str) -> None:
    """Drop the tables named with ``prefix`` and PostgreSQL's trigger function, each name quoted
    as SQLAlchemy and the migrations quote it (a prefix with capitals keeps its case)."""
    engine = create_engine(normalise_url(url))
    quote = engine.dialect.identifier_preparer.quote
    try:
        with engine.begin() as connection:
            names = [n for n in inspect(connection).get_table_names() if n.startswith(prefix)]
            # One statement on a server, whose DDL costs a round of syncs each; SQLite drops
            # one table a statement.
            statements = [names] if connection.dialect.name != "sqlite" else [[n] for n in names]
            for dropped in filter(None, statements):
                connection.execute(text(f"DROP TABLE {', '.join(map(quote, dropped))}"))
            if connection.dialect.name == "postgresql":  # the trigger's, of migration 0008
                function = quote(notify_function(prefix))
                connection.execute(text(f"DROP FUNCTION IF EXISTS {function}()"))
    finally:
        engine.dispose()


def _database(backend: str, tmp_path: Any) -> Iterator[Database]:
    url = f"sqlite:///{tmp_path}/rota.db" if backend == "sqlite" else server_url(backend)
    database = Database(backend, url, f"t{uuid.uuid4().hex[:10]}_")
    yield database
    if backend != "sqlite":
        drop_prefixed_tables(url, database.prefix)


@pytest.fixture(params=["sqlite", "mariadb", "postgres"])
def db(request: pytest.FixtureRequest, tmp_path: Any) -> Iterator[Database]:
    yield from _database(request.param, tmp_path)


@pytest.fixture(params=["mariadb", "postgres"])
def server_db(request: pytest.FixtureRequest, tmp_path: Any) -> Iterator[Database]:
    """Only the servers that lock with SKIP LOCKED."""
    yield from _database(request.param, tmp_path)


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock(START)


@pytest.fixture
def control(db: Database) -> Iterator[Rota]:
    """A test's own Rota beside worker processes: real clock, queues by task name, inspects
    jobs and workers; it migrates before any worker starts."""
    rota = Rota(db.url, table_prefix=db.prefix, connect_timeout=10)
    rota.jobs()
    yield rota
    sql_store(rota).engine.dispose()


@pytest.fixture
def workers(db: Database, control: Rota, tmp_path: Path) -> Iterator[Workers]:
    """Worker processes of the test (``tests.workers``), killed when it ends."""
    from tests.workers import Workers

    started = Workers(db, control, tmp_path)
    try:
        yield started
    finally:
        started.stop_all()


@pytest.fixture
def make_rota(db: Database, clock: FakeClock) -> Iterator[Callable[..., Rota]]:
    """Build ``Rota`` instances on the test's database; each has its own connections."""
    made: list[Rota] = []

    def make(**options: Any) -> Rota:
        options.setdefault("clock", clock)
        options.setdefault("poll_interval", 0.05)
        options.setdefault("connect_timeout", 5)
        rota = Rota(db.url, table_prefix=db.prefix, **options)
        made.append(rota)
        return rota

    yield make
    for rota in made:
        sql_store(rota).engine.dispose()


@pytest.fixture
def rota(make_rota: Callable[..., Rota]) -> Rota:
    return make_rota()


@pytest.fixture
def mariadb(tmp_path: Any) -> Iterator[Database]:
    """MariaDB alone, for what the issue asks of MySQL specifically."""
    yield from _database("mariadb", tmp_path)


@pytest.fixture
def postgres(tmp_path: Any) -> Iterator[Database]:
    """PostgreSQL alone, for what only it is tested with (stopping the server)."""
    yield from _database("postgres", tmp_path)
