"""A SQLAlchemy ``Connection`` over a DB-API connection that its owner lends to rota.

A job queued inside the owner's transaction (Django's ``transaction.atomic``) must be written
in that transaction, so that it exists only if the transaction commits: no second connection,
no ``on_commit`` race. The connection and its transaction stay the owner's, and SQLAlchemy would
end them: a ``Connection`` closed inside a transaction rolls it back, a pool resets a connection
returned to it and closes one it drops. So the owner's connection reaches SQLAlchemy only
through ``Lent``, whose ``commit``, ``rollback`` and ``close`` do nothing (the owner's own calls go
to its connection directly, never through ``Lent``), under a ``NullPool`` that resets nothing.

The engine shares the store's own dialect, which the store's first connection has initialised:
none of SQLAlchemy's set-up of a new connection (``SET NAMES``, SQLite functions, isolation
levels, the version queries) ever runs on the owner's connection, only the statements of the
work itself. That dialect is also why the lent connection must come from the store's own
driver (``ConfigError`` otherwise).
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from contextvars import ContextVar
from typing import Any, cast

from sqlalchemy.engine import Connection, Engine
from sqlalchemy.engine.interfaces import DBAPIConnection
from sqlalchemy.pool import NullPool

from rota.errors import ConfigError
from rota.store.database import Database
from rota.store.values import Loan

_lent: ContextVar[Any] = ContextVar("rota_lent_connection")
"""The connection lent in this thread or task, for the ``borrow`` block it is lent for."""


class Lent:
    """The DB-API connection lent in the current context, as SQLAlchemy may use it: every
    attribute is the connection's own, except the three calls that would end what the owner
    holds, which do nothing."""

    def commit(self) -> None:
        """The owner commits, when its transaction ends."""

    def rollback(self) -> None:
        """The owner rolls back; SQLAlchemy calls this when a borrowed ``Connection`` closes."""

    def close(self) -> None:
        """The owner closes its connection; the pool calls this when it drops the record."""

    def __getattr__(self, name: str) -> Any:
        return getattr(_lent.get(), name)


class Lender:
    """Lends borrowed connections to one store's SQL, on an engine made at the first loan."""

    def __init__(self, database: Database) -> None:
        self.database = database
        self._engine: Engine | None = None
        self._lock = threading.Lock()

    @contextlib.contextmanager
    def borrow(
        self, dbapi_connection: object, serial: AbstractContextManager[object] | None = None
    ) -> Iterator[Connection]:
        """A ``Connection`` whose statements run on ``dbapi_connection``, in the transaction
        its owner holds open; leaving the block ends nothing of the owner's. ``serial`` (a
        lock), when the owner shares its connection between threads, is held meanwhile."""
        engine = self._engine or self._make_engine()
        self._check_driver(engine, dbapi_connection)
        with serial or contextlib.nullcontext():
            token = _lent.set(dbapi_connection)
            try:
                with engine.connect() as connection:
                    yield connection
            finally:
                _lent.reset(token)

    def _make_engine(self) -> Engine:
        with self._lock:
            if self._engine is None:
                own = self.database.engine
                # The dialect learns the server (version, MariaDB or not, SQL mode) when the
                # store first connects; connect once here in case it has not yet.
                with self.database.translate_errors(), own.connect():
                    pass
                lent = cast(DBAPIConnection, Lent())
                pool = NullPool(lambda: lent, reset_on_return=None, dialect=own.dialect)
                self._engine = Engine(pool, own.dialect, own.url)
            return self._engine

    @staticmethod
    def _check_driver(engine: Engine, dbapi_connection: object) -> None:
        own = engine.dialect.loaded_dbapi.__name__.partition(".")[0]
        lent = type(dbapi_connection).__module__.partition(".")[0]
        if lent != own:
            raise ConfigError(
                f"a {lent} connection cannot carry rota's statements, which are made for its "
                f"{own} driver: give rota the driver of the connection it borrows"
            )


def lending(
    lender: Lender, source: Callable[[], Loan | None]
) -> Callable[[], AbstractContextManager[Connection] | None]:
    """``Database.lending`` over ``source``: each transaction runs on the connection
    ``source`` lends at that moment, if any."""

    def lend() -> AbstractContextManager[Connection] | None:
        loan = source()
        return None if loan is None else lender.borrow(loan.connection, loan.serial)

    return lend
