"""One database as the store modules share it: engine, dialect, tables, and transactions that
repeat themselves after a conflict.

Jobs, schedules, workers and migrations are siblings over one ``Database``; none of them opens
a connection or handles a driver error in any other way than through ``transaction``.
"""

from __future__ import annotations

import contextlib
import copy
import importlib.metadata
import logging
import platform
import random
import time
from collections.abc import Callable, Iterable
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any, TypeVar

from sqlalchemy import CompoundSelect, Executable, Row, Select, Table, select
from sqlalchemy.engine import URL, Connection
from sqlalchemy.sql.elements import ColumnElement

from rota.core.backoff import doubling
from rota.core.clock import ClockReading, as_utc
from rota.core.connection import DEFAULT_CONNECTION, DEFAULT_NAMESPACE, ConnectionSettings
from rota.errors import TransientStoreError
from rota.store.dialects import dialect_for
from rota.store.dialects.pooling import STANDALONE
from rota.store.events import EventSink, log_event
from rota.store.rows import ReportedRows
from rota.store.schema import build_schema
from rota.store.secrets import hide
from rota.store.urls import describe_url, normalise_url, url_secrets
from rota.store.values import ServerInfo, UnreadableRow

if TYPE_CHECKING:
    from typing_extensions import TypeVarTuple, Unpack

    Ts = TypeVarTuple("Ts")

T = TypeVar("T")
logger = logging.getLogger("rota.store")
CONFLICT_ATTEMPTS = 6
CONFLICT_BUDGET = 5.0


class Database:
    """An engine on ``url`` with the dialect chosen for it and the tables named by the prefix;
    its connections bounded by ``connection`` (``RotaConfig``'s defaults if not given); what it
    meets (lost connections, unreadable rows) announced to ``events``.  Every row it writes
    and every row it reads by name is of ``namespace`` (``mine``); rows read by job id are not
    (ids are unique across namespaces)."""

    def __init__(
        self,
        url: str | URL,
        table_prefix: str = "rota_",
        connection: ConnectionSettings | None = None,
        events: EventSink = log_event,
        namespace: str = DEFAULT_NAMESPACE,
    ) -> None:
        self.url = normalise_url(url)
        self.secrets = url_secrets(url)
        self.dialect = dialect_for(self.url)
        self.connection = connection or DEFAULT_CONNECTION
        self.events = events
        self.engine = self.dialect.create_engine(self.url, self.connection, events)
        self.lending: Callable[[], AbstractContextManager[Connection] | None] | None = None
        """Where a caller lends its own connection (``SqlStore.lend_from``): asked at each
        transaction, a connection it gives runs that transaction's work, in a savepoint of the
        caller's transaction, instead of one of the pool's."""
        self.table_prefix = table_prefix
        self.namespace = namespace
        self.schema = build_schema(table_prefix)
        self._statement_limit: int | None = None
        self.reported = ReportedRows(events)

    def in_namespace(self, namespace: str) -> Database:
        """This database, its engine and pool shared, for the rows of ``namespace``."""
        other = copy.copy(self)
        other.namespace = namespace
        return other

    @property
    def where(self) -> str:
        """The database, described without its password."""
        return describe_url(self.url)

    def mine(self, table: Table) -> ColumnElement[bool]:
        """The condition that keeps a statement on ``table`` to this namespace's rows."""
        return table.c.namespace == self.namespace

    def translate_errors(self) -> contextlib.AbstractContextManager[None]:
        """The dialect's translation of driver errors, with this URL's secrets kept out."""
        return self.dialect.translate_errors(self.hide_secrets)

    def hide_secrets(self, text: str) -> str:
        return hide(text, self.secrets)

    def readable(self, rows: Iterable[T | UnreadableRow]) -> list[T]:
        """``rows`` without the unreadable ones, each logged once (``ReportedRows``)."""
        kept: list[T] = []
        for row in rows:
            if isinstance(row, UnreadableRow):
                self.reported.report(row)
            else:
                kept.append(row)
        return kept

    def transaction(self, work: Callable[[Connection], T], *, idempotent: bool = True) -> T:
        """Run ``work`` in one transaction, repeating it after a deadlock or lock-wait timeout.

        Those undo the whole transaction, so repeating is always safe and callers never see
        them unless they persist: up to six attempts, but past the first repeat only within
        ``CONFLICT_BUDGET`` seconds, since each lock wait may itself last a server timeout.
        A connection dropped before the ``COMMIT`` was sent (one that died in the pool and is
        found so by its first statement, which is why the pool pings only idle connections)
        committed nothing: ``work`` is repeated once, on a fresh connection. Dropped during the
        ``COMMIT``, it may have committed: ``work`` is repeated once only when it is
        ``idempotent`` (its write and its answer stay right). On a connection ``lending`` gives,
        ``work`` runs once, in a savepoint: an error undoes only its own statements.
        """
        return self._run(work, idempotent=idempotent, standalone=False)

    def standalone(self, work: Callable[[Connection], T], *, idempotent: bool = True) -> T:
        """Run ``work``, one statement, on its own: in autocommit mode, one round trip with no
        ``COMMIT`` (``pooling.STANDALONE``), repeated as ``transaction`` repeats, its statement
        taken as the commit. On a lent connection it runs as ``transaction`` runs, in the
        owner's transaction, whose uncommitted rows it must see."""
        return self._run(work, idempotent=idempotent, standalone=True)

    def _run(self, work: Callable[[Connection], T], *, idempotent: bool, standalone: bool) -> T:
        lent = self.lending() if self.lending is not None else None
        if lent is not None:
            with self.translate_errors(), lent as connection, connection.begin_nested():
                return work(connection)
        started = time.monotonic()
        attempt = 1
        while True:
            committing = standalone
            try:
                with self.translate_errors(), self.engine.connect() as connection:
                    if standalone:
                        return work(connection.execution_options(**{STANDALONE: True}))
                    transaction = connection.begin()
                    done = work(connection)
                    committing = True
                    transaction.commit()
                    return done
            except TransientStoreError as error:
                if error.rolled_back and may_repeat(attempt, time.monotonic() - started):
                    delay = conflict_delay(attempt)
                    logger.debug("%s; repeating the transaction in %.3f s", error, delay)
                    time.sleep(delay)
                elif not error.rolled_back and (idempotent or not committing) and attempt == 1:
                    logger.info("%s; repeating the transaction on a new connection", error)
                else:
                    raise
            attempt += 1

    def statement_limit(self, connection: Connection) -> int:
        """The most bytes one statement may hold (``Dialect.statement_limit``), read from the
        server through ``connection`` the first time it is asked for, then kept."""
        if self._statement_limit is None:
            self._statement_limit = self.dialect.statement_limit(connection)
        return self._statement_limit

    def fetch(self, query: Select[Unpack[Ts]]) -> list[Row[Unpack[Ts]]]:
        """Every row of one read, on its own (``standalone``)."""
        return self.standalone(lambda connection: list(connection.execute(query)))

    def write(self, statement: Executable, *, idempotent: bool = True) -> int:
        """One statement on its own (``standalone``); the rows it changed."""
        return int(
            self.standalone(
                lambda connection: connection.execute(statement).rowcount, idempotent=idempotent
            )
        )

    def server_info(self) -> ServerInfo:
        with self.translate_errors(), self.engine.connect() as connection:
            return self.dialect.describe_server(connection)

    def server_clock(self) -> ClockReading | None:
        """The server's clock, bracketed around its statement alone (not the pool's checkout
        nor the commit), so that the reading's uncertainty is that of one round trip."""
        query = self.dialect.server_time_query()
        if query is None:
            return None

        def read(connection: Connection) -> ClockReading:
            sent = time.monotonic()
            value = connection.exec_driver_sql(query).scalar_one()
            return ClockReading(as_utc(value), sent, time.monotonic())

        return self.standalone(read)

    def driver(self) -> tuple[str, str]:
        """The DB-API driver's name and version, from its distribution's metadata if it has one.

        PyMySQL's ``__version__`` imitates mysqlclient's, hence the metadata first.
        """
        dialect = self.engine.dialect
        module = dialect.loaded_dbapi
        top = module.__name__.partition(".")[0]
        with contextlib.suppress(importlib.metadata.PackageNotFoundError):
            return dialect.driver, importlib.metadata.version(top)
        version = getattr(module, "__version__", None)
        if isinstance(version, str):
            return dialect.driver, version
        return dialect.driver, f"{platform.python_version()} (Python standard library)"


def may_repeat(attempt: int, elapsed: float) -> bool:
    return attempt < CONFLICT_ATTEMPTS and (attempt == 1 or elapsed < CONFLICT_BUDGET)


def conflict_delay(attempt: int) -> float:
    """10 ms doubling per attempt, jittered so that the two sides of a deadlock drift apart."""
    return doubling(0.01, CONFLICT_BUDGET, attempt) * random.uniform(0.5, 1.5)


def every_row(union: CompoundSelect[Any]) -> Select[Unpack[tuple[Any, ...]]]:
    """A UNION as the plain SELECT of its rows, the one kind of read ``Database.fetch`` takes."""
    return select(*union.subquery().c)
