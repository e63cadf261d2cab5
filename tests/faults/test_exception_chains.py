"""An error of connecting leads nowhere the password is: not its text, its chain, its frames.

``test_secrets`` and ``tests/security/test_password`` look at what an error *says* (``str``,
``repr``, the formatted traceback).  Sentry's scrubbing and Django's debug page go further: they
walk ``__cause__`` and ``__context__``, show every frame's locals and the errors' attributes.
A ``StoreError`` chained to the driver's error led there to SQLAlchemy's ``cparams``, PyMySQL's
``password``, psycopg's ``conninfo`` and its ``PGconn``.  Here every such error is walked, as
those tools do, for a wrong password (a MariaDB account of the test's own; a PostgreSQL cluster
of the test's own that checks passwords, the shared one trusting local connections) and for a
port where nothing listens, and must still carry the driver's own words.
"""

from __future__ import annotations

import asyncio
import traceback
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from sqlalchemy.engine import make_url

from rota import Rota
from tests.conftest import Database
from tests.faults.own_postgres import own_postgres
from tests.faults.servers import free_port, mariadb_user
from tests.helpers import sql_store

DEPTH = 3
"""How deep the attributes of an error's attributes are looked into."""
REFUSED = {"mariadb": "Can't connect to", "postgres": "Connection refused"}


def secret() -> str:
    return f"Pw-{uuid.uuid4().hex}"


def texts_of(value: object) -> str:
    try:
        return repr(value)
    except Exception:  # a half-made object: its type is all there is to show
        return object.__repr__(value)


def reachable(error: BaseException) -> list[str]:
    """What a tool walking ``error`` can show: every error linked by ``__cause__``,
    ``__context__``, an attribute or a frame's local, and for each its ``str``, ``repr`` and
    ``args``, the ``repr`` of every local of every frame of its traceback, and of its
    attributes and theirs (``vars()``) to ``DEPTH``.  The frame that caught ``error`` (the
    test's) is left out: it holds the URL."""
    assert error.__traceback__ is not None
    catcher = error.__traceback__.tb_frame
    found: list[str] = []
    pending: list[BaseException] = [error]
    seen: set[int] = set()

    def look(value: object, depth: int | None = None) -> None:
        """``value``'s ``repr``; with a ``depth``, its attributes' too, down to ``DEPTH``."""
        found.append(texts_of(value))
        if isinstance(value, BaseException):
            pending.append(value)
        attributes = getattr(value, "__dict__", None)
        if depth is not None and depth < DEPTH and isinstance(attributes, dict):
            for attribute in attributes.values():
                look(attribute, depth + 1)

    while pending:
        current = pending.pop()
        if id(current) in seen:
            continue
        seen.add(id(current))
        found += [str(current), repr(current), repr(current.args)]
        pending += [linked for linked in (current.__cause__, current.__context__) if linked]
        look(current, 0)
        for frame, _ in traceback.walk_tb(current.__traceback__):
            if frame is not catcher:
                for local in frame.f_locals.values():
                    look(local)
    return found


def failures(url: str, prefix: str) -> Iterator[BaseException]:
    """The errors of a call, a queue and a worker's start on ``url``."""
    rota = Rota(url, table_prefix=prefix, connect_timeout=1)
    calls: list[Callable[[], object]] = [
        lambda: rota.job(1),
        lambda: rota.queue("greet", "ada"),
        lambda: asyncio.run(rota.start()),
    ]
    try:
        for call in calls:
            yield failure_of(call)
    finally:
        sql_store(rota).engine.dispose()


def failure_of(call: Callable[[], object]) -> BaseException:
    """What ``call`` raised, caught in a frame that holds nothing but ``call``."""
    try:
        call()
    except Exception as error:
        return error
    raise AssertionError(f"{call} did not fail")


def assert_unchained(url: str, prefix: str, password: str, code: str, driver_text: str) -> None:
    errors = list(failures(url, prefix))
    for error in errors:
        assert getattr(error, "code", None) == code, repr(error)
        assert driver_text in str(error), "the driver's own words are kept"
        assert error.__cause__ is None and error.__context__ is None
        assert error.__suppress_context__
        shown = reachable(error)
        assert len(shown) > 3, "the error's frames were walked"
        leaks = [text[:300] for text in shown if password in text]
        assert leaks == [], f"the password is one step from {error!r}"


def test_a_wrong_password_on_mariadb_leaves_no_way_to_it(mariadb_drivers: Database) -> None:
    """Through PyMySQL and mysqlclient."""
    with mariadb_user(mariadb_drivers, secret()) as account:
        wrong = secret()
        url = make_url(account).set(password=wrong).render_as_string(False)
        assert_unchained(url, mariadb_drivers.prefix, wrong, "STORE_ERROR", "Access denied")


@pytest.mark.slow
def test_a_wrong_password_on_postgresql_leaves_no_way_to_it() -> None:
    with own_postgres(password=secret()) as cluster:
        wrong = secret()
        url = cluster.url_with(wrong)
        text = "password authentication failed"
        assert_unchained(url, "rota_", wrong, "STORE_ERROR", text)


@pytest.mark.parametrize("server", ["mariadb", "postgres"])
def test_an_unreachable_server_leaves_no_way_to_the_password(server: str) -> None:
    scheme = {"mariadb": "mysql", "postgres": "postgresql"}[server]
    password = secret()
    url = f"{scheme}://rota:{password}@127.0.0.1:{free_port()}/test"
    assert_unchained(url, "rota_", password, "DATABASE_UNAVAILABLE", REFUSED[server])


def test_a_sqlite_file_that_cannot_be_opened_is_an_unchained_error(tmp_path: Path) -> None:
    """No password here, but the same translation: the driver's words, no chain."""
    url = f"sqlite:///{tmp_path}/missing/directory/rota.db"
    assert_unchained(url, "rota_", "no password", "STORE_ERROR", "unable to open database file")
