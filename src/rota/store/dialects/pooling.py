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
"""

from __future__ import annotations

import logging
import time
from typing import Any

from sqlalchemy import event
from sqlalchemy import exc as sa_exc
from sqlalchemy.engine import Engine
from sqlalchemy.pool import ConnectionPoolEntry, PoolProxiedConnection, PoolResetState

from rota.core.events import EventName
from rota.store.events import EventSink

logger = logging.getLogger("rota.store")
PING_AFTER_IDLE = 1.0
"""Seconds in the pool after which a connection is pinged before use. A busy process, which
reuses its connections within milliseconds, pays no ping; an idle one pays one per checkout,
as with SQLAlchemy's ``pool_pre_ping``."""
SERVER_POOL_OPTIONS: dict[str, Any] = {"pool_reset_on_return": None, "pool_use_lifo": True}
"""The engine options that hand the reset on return over to ``watch_pool``, and reuse the
connection returned last: an idle worker's one look a poll keeps reusing one connection, used
within ``PING_AFTER_IDLE``, instead of going round the pool and pinging each (the others age
out on the server's ``wait_timeout`` and are pinged, or replaced, when next needed)."""
_RETURNED = "rota_returned_at"


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
