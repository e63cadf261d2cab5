"""Hearing new jobs as they commit: PostgreSQL's ``LISTEN`` on the jobs table's channel.

The trigger of migration 0008 notifies the channel once per inserting statement, delivered
when its transaction commits.  The listening connection is the engine's (its keepalives and
timeouts), detached from the pool so that it never serves a query, and in autocommit so that
``LISTEN`` takes effect at once.  Waiting sends nothing: an idle listener costs the server no
statement at all.
"""

from __future__ import annotations

import contextlib
import os
import selectors
import threading
from collections.abc import Iterator
from typing import Any

from rota.errors import TransientStoreError, unchained
from rota.store.database import Database


class ListeningConnection:
    """One connection listening on ``channel``: ``wait`` and ``close`` from the thread that
    listens, ``interrupt`` from any thread."""

    def __init__(self, database: Database, channel: str) -> None:
        """Connecting fails as any store call does; listening, or a connection lost later,
        with a ``TransientStoreError``. So does a driver error of the connection's set-up
        (a server restarting accepts it, then fails its first statements), which the pool's
        raw connection, unlike a store call's, passes on unwrapped."""
        self._hide = database.hide_secrets
        self._driver_error: type[Exception] = database.engine.dialect.loaded_dbapi.Error
        with self._lost(), database.translate_errors():
            proxied = database.engine.raw_connection()
        connection = proxied.driver_connection
        assert connection is not None
        proxied.detach()
        self._connection: Any = connection
        with self._lost():
            try:
                self._connection.autocommit = True
                # Quoted as the trigger names it (a prefix is plain identifier characters).
                self._connection.execute(f'LISTEN "{channel}"')
            except BaseException:
                self._connection.close()
                raise
        self._lock = threading.Lock()
        self._closed = False
        self._woken, self._waker = os.pipe()
        self._selector = selectors.DefaultSelector()
        self._selector.register(self._connection.fileno(), selectors.EVENT_READ)
        self._selector.register(self._woken, selectors.EVENT_READ)

    def wait(self, timeout: float) -> bool:
        """Whether a new job was announced within ``timeout`` seconds (several announcements
        count as one); ``False`` at once once interrupted.  A lost connection raises."""
        ready = {key.fd for key, _ in self._selector.select(timeout)}
        if self._woken in ready or not ready:
            return False
        with self._lost():
            return bool(list(self._connection.notifies(timeout=0)))

    def interrupt(self) -> None:
        """End the current and every later ``wait`` at once."""
        with self._lock:
            if not self._closed:
                os.write(self._waker, b"x")

    def close(self) -> None:
        with self._lock:
            if self._closed:
                return
            self._closed = True
            self._selector.close()
            os.close(self._woken)
            os.close(self._waker)
        self._connection.close()

    @contextlib.contextmanager
    def _lost(self) -> Iterator[None]:
        try:
            yield
        except self._driver_error as error:
            message = self._hide(f"{type(error).__name__}: {error}")
            unchained(TransientStoreError(f"listening for new jobs: {message}"))
