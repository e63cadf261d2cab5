"""Hearing jobs queued by other processes as they commit, where the backend announces them.

On PostgreSQL a job queued anywhere starts within milliseconds instead of at the next poll:
one thread waits on a listening connection of its own (``Store.listen_for_jobs``) and wakes the
claim loop, as a local enqueue does.  Polling stays the fallback, for what an announcement
misses (a retry or rescue coming due, a resumed queue) and for while the connection is down:
it is made again after a back-off, and a wake-up follows each new connection, for the jobs
queued while nobody listened.  Backends without announcements start no thread.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Callable

from rota.observe.events import EventLog
from rota.runtime.worker.backoff import LoopBackoff
from rota.store.base import NewJobSignal, Store

WAIT = 5.0
"""Seconds one wait lasts before it is begun again (a stop interrupts it at once)."""


class JobListener:
    def __init__(
        self, store: Store, wake: Callable[[], None], max_backoff: float, events: EventLog
    ) -> None:
        """``wake`` is called in the event loop that ``start`` is given."""
        self.store = store
        self._wake = wake
        self._loop: asyncio.AbstractEventLoop | None = None
        self.backoff = LoopBackoff("listen", max_backoff, events)
        self._stopped = threading.Event()
        self._lock = threading.Lock()
        self._signal: NewJobSignal | None = None
        self._thread: threading.Thread | None = None

    def start(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop
        self._thread = threading.Thread(target=self._listening, name="rota-listen", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """Stop listening; the thread closes its connection and ends at once."""
        self._stopped.set()
        with self._lock:
            if self._signal is not None:
                self._signal.interrupt()

    def _listening(self) -> None:
        while not self._stopped.is_set():
            try:
                signal = self.store.listen_for_jobs()
            except Exception as error:
                self._stopped.wait(self.backoff.failed(error))
                continue
            if signal is None:
                return
            try:
                self._hear(signal)
            except Exception as error:
                self._stopped.wait(self.backoff.failed(error))
            finally:
                with self._lock:
                    self._signal = None
                signal.close()

    def wake(self) -> None:
        assert self._loop is not None
        with contextlib.suppress(RuntimeError):  # the loop has closed
            self._loop.call_soon_threadsafe(self._wake)

    def _hear(self, signal: NewJobSignal) -> None:
        with self._lock:
            self._signal = signal
            if self._stopped.is_set():
                return
        self.backoff.succeeded()
        self.wake()
        while not self._stopped.is_set():
            if signal.wait(WAIT):
                self.wake()
