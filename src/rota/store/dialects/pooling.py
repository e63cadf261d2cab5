"""How a pooled connection to a database server is checked out and handed back: no round trip
that is not needed.

SQLAlchemy's defaults cost two round trips per transaction beside the transaction's own: a
pre-ping on every checkout and a ``ROLLBACK`` on every return, even after a ``COMMIT``. For a
single ``queue()`` (``INSERT`` + ``COMMIT``) that doubled the work (issue 18). Here:

* a connection is pinged only when it has been idle in the pool for ``PING_AFTER_IDLE``: that
  is when the server may have closed it (``wait_timeout``, a restart, a failover while nothing
  was running). One that dies while in steady use fails its first statement instead, before
  any ``COMMIT`` was sent, and ``Database.transaction`` repeats the transaction on a new
  connection: nothing can have been written by it (see ``Database.transaction``).
* a connection is rolled back on return only when its driver says a transaction is open (or
  cannot say): after ``COMMIT`` or ``ROLLBACK`` there is nothing to undo.
* a statement of its own (``Database.fetch``, ``Database.write``: an idle worker's look, a
  heartbeat) runs in the driver's autocommit mode (``STANDALONE``): one round trip, with no
  ``COMMIT`` after it. Each dialect's ``begin`` switches the mode only when it changes, so an
  idle process that sends nothing else pays no switch either.
* an idle process keeps one connection (``RetiringPool``): the others a burst opened (start-up
  runs several loops at once) are closed once one at a time has been enough for a while, so a
  fleet of idle workers holds one connection each.
* a burst of short transactions shares the connections already open (``BURST_WAIT``): a
  starting worker's loops, whose first passes run at once, no longer open one each.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import Any

from sqlalchemy import event
from sqlalchemy import exc as sa_exc
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.pool import ConnectionPoolEntry, PoolProxiedConnection, PoolResetState, QueuePool
from sqlalchemy.util import queue as sqla_queue

from rota.core.events import EventName
from rota.store.events import EventSink

logger = logging.getLogger("rota.store")
PING_AFTER_IDLE = 1.0
"""Seconds in the pool after which a connection is pinged before use. A busy process, which
reuses its connections within milliseconds, pays no ping; an idle one pays one per checkout,
as with SQLAlchemy's ``pool_pre_ping``."""
RETIRE_AFTER = 10.0
"""Seconds a connection may wait in the pool unused before one returned meanwhile is closed
instead of kept: a busy worker, whose loops overlap all the time, keeps its connections; an idle
one keeps the one its look uses, and a fleet of workers started together soon holds one each."""
BURST_WAIT = 0.1
"""Seconds a checkout waits for a connection another thread is using to come back before it
opens one more: the loops of a starting worker all begin at once, and each, opening its own,
made a fleet of workers started together reach ``max_connections``. A burst of short
transactions now shares one connection; a long one still gets its own after the wait."""
QUEUE_POOL_LOGGER = "sqlalchemy.pool.impl.QueuePool"
STANDALONE = "rota_standalone"
"""The execution option of a connection whose one statement runs in autocommit mode."""
_RETURNED = "rota_returned_at"


class RetiringPool(QueuePool):
    """A ``QueuePool`` that shrinks back to the connections in use. SQLAlchemy's pool keeps
    every connection it opened, up to its size, for ever: a worker that once ran four loops at
    the same moment would hold four connections while idle, and a hundred idle workers would
    exhaust a server's ``max_connections``. Here a connection returned while another has waited
    in the pool unused for ``RETIRE_AFTER`` is closed (with the pool last in, first out, the
    one waiting is the one not needed; it serves the next checkout instead)."""

    clock: Callable[[], float] = staticmethod(time.monotonic)
    burst_wait: float = BURST_WAIT

    def __init__(self, *args: Any, **options: Any) -> None:
        super().__init__(*args, **options)
        # SQLAlchemy names a pool's logger after its class, here one under rota's own.
        self.logger = logging.getLogger(QUEUE_POOL_LOGGER)
        self._waiting: dict[ConnectionPoolEntry, float] = {}
        """The connections in the pool, and since when each has waited there."""
        self._holders: dict[ConnectionPoolEntry, int] = {}
        """The connections in use, and the thread that checked each out."""
        self._lock = threading.Lock()

    def _do_get(self) -> ConnectionPoolEntry:
        record = self._returned() if self._shared_soon() else None
        record = record or super()._do_get()
        with self._lock:
            self._waiting.pop(record, None)
            self._holders[record] = threading.get_ident()
        return record

    def _shared_soon(self) -> bool:
        """Whether a checkout should wait for a connection in use to come back: none waits in
        the pool, and those in use are all another thread's (a thread that holds one and asks
        for another would wait for itself)."""
        with self._lock:
            holders = set(self._holders.values())
        all_in_use = self._pool.empty() and self.checkedout() > 0
        return all_in_use and bool(holders) and threading.get_ident() not in holders

    def _returned(self) -> ConnectionPoolEntry | None:
        try:
            return self._pool.get(True, self.burst_wait)
        except sqla_queue.Empty:
            return None

    def _do_return_conn(self, record: ConnectionPoolEntry) -> None:
        now = self.clock()
        with self._lock:
            self._holders.pop(record, None)
            unused = any(now - since > RETIRE_AFTER for since in self._waiting.values())
            if not unused:
                self._waiting[record] = now
        if unused:
            # What the pool does with a connection beyond its size.
            try:
                record.close()
            finally:
                self._dec_overflow()
            return
        super()._do_return_conn(record)


SERVER_POOL_OPTIONS: dict[str, Any] = {
    "poolclass": RetiringPool,
    "pool_reset_on_return": None,
    "pool_use_lifo": True,
}
"""The engine options that hand the reset on return over to ``watch_pool``, retire the
connections an idle process no longer needs, and reuse the connection returned last: an idle
worker's one look a poll keeps reusing one connection, used within ``PING_AFTER_IDLE``, instead
of going round the pool and pinging each."""


def watch_pool(engine: Engine, events: EventSink) -> None:
    """Ping idle connections at checkout and roll back, on return, only those that may hold a
    transaction (``transaction_open``), telling ``events`` of each connection found lost; the
    engine must have been created with ``SERVER_POOL_OPTIONS``."""

    @event.listens_for(engine, "checkin")
    def _returned(dbapi_connection: Any, record: ConnectionPoolEntry) -> None:
        record.info[_RETURNED] = time.monotonic()

    @event.listens_for(engine, "checkout")
    def _checkout(
        dbapi_connection: Any, record: ConnectionPoolEntry, proxy: PoolProxiedConnection
    ) -> None:
        returned = record.info.get(_RETURNED)
        if returned is None or time.monotonic() - returned < PING_AFTER_IDLE:
            return
        try:
            engine.dialect.do_ping(dbapi_connection)
        except engine.dialect.loaded_dbapi.Error as error:
            lost(events, error, pre_ping=True)
            # The pool discards this connection and checks out another (a new one, tried the
            # same way): what SQLAlchemy's own pre-ping does.
            raise sa_exc.DisconnectionError(str(error)) from error

    @event.listens_for(engine, "reset")
    def _reset(dbapi_connection: Any, record: ConnectionPoolEntry, state: PoolResetState) -> None:
        if not state.terminate_only and transaction_open(dbapi_connection):
            try:
                dbapi_connection.rollback()
            except engine.dialect.loaded_dbapi.Error as error:
                # What the pool does with a reset that raises, without its ERROR traceback:
                # the connection is closed and the next checkout opens a new one.
                lost(events, error, on_return=True)
                record.invalidate(error)


def standalone(connection: Connection) -> bool:
    """Whether ``connection`` runs one statement on its own (``STANDALONE``), or was put in
    SQLAlchemy's ``AUTOCOMMIT`` isolation level by its user, rather than a transaction."""
    options = connection.get_execution_options()
    return bool(options.get(STANDALONE)) or options.get("isolation_level") == "AUTOCOMMIT"


def lost(events: EventSink, error: BaseException, **where: bool) -> None:
    """Tell ``events`` that a connection was lost; ``where`` says when it was found so."""
    events(
        logger,
        EventName.DB_DISCONNECTED,
        logging.WARNING,
        "lost a database connection (%s: %s); the pool will open a new one",
        type(error).__name__,
        error,
        exc_info=None,
        **where,
    )


def transaction_open(dbapi_connection: Any) -> bool:
    """Whether a driver connection may hold an open transaction: ``False`` only when the driver
    says it holds none (psycopg's and psycopg2's ``info.transaction_status`` is idle; PyMySQL's
    last ``server_status`` lacks ``SERVER_STATUS_IN_TRANS``); ``True`` for a driver that cannot
    say."""
    status = getattr(getattr(dbapi_connection, "info", None), "transaction_status", None)
    if isinstance(status, int):
        return status != 0  # TRANSACTION_STATUS_IDLE / TransactionStatus.IDLE
    server_status = getattr(dbapi_connection, "server_status", None)
    if isinstance(server_status, int):
        return bool(server_status & 1)  # SERVER_STATUS_IN_TRANS
    return True
