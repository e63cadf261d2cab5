"""The threads sync handlers run in.

They are daemon threads: a handler that ignores its interruption (``ctx.cancelled``) cannot be
stopped in-process, and a worker that stops must not wait for it for ever.  At exit such a
thread is abandoned, as SIGKILL would abandon it, and its job is recovered by lease expiry;
``concurrent.futures.ThreadPoolExecutor`` would instead keep the interpreter alive until it
returned.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import Future
from queue import SimpleQueue
from typing import Any, Protocol

Work = tuple[Future[Any], Callable[..., Any], tuple[Any, ...]]


class Threads(Protocol):
    """Where the executor submits sync handlers (``HandlerThreads``, or any executor)."""

    def submit(self, fn: Callable[..., Any], /, *args: Any) -> Future[Any]: ...


class HandlerThreads:
    """Up to ``size`` daemon threads, started as work arrives and kept for the next job."""

    def __init__(self, size: int, name: str) -> None:
        self.size = size
        self.name = name
        self._queue: SimpleQueue[Work | None] = SimpleQueue()
        self._lock = threading.Lock()
        self._threads: list[threading.Thread] = []
        self._idle = 0
        """Threads waiting for work."""
        self._waiting = 0
        """Work submitted and not yet taken: each needs an idle thread, or a new one."""
        self._closed = False

    def submit(self, function: Callable[..., Any], *args: Any) -> Future[Any]:
        future: Future[Any] = Future()
        with self._lock:
            if self._closed:
                raise RuntimeError("the handler threads are shut down")
            self._waiting += 1
            if self._idle < self._waiting and len(self._threads) < self.size:
                thread = threading.Thread(
                    target=self._serve, name=f"{self.name}_{len(self._threads)}", daemon=True
                )
                self._threads.append(thread)
                thread.start()
        self._queue.put((future, function, args))
        return future

    def shutdown(self) -> None:
        """Refuse new work and let idle threads end; busy ones end when their handler does."""
        with self._lock:
            self._closed = True
            count = len(self._threads)
        for _ in range(count):
            self._queue.put(None)

    def _serve(self) -> None:
        while True:
            with self._lock:
                self._idle += 1
            work = self._queue.get()
            with self._lock:
                self._idle -= 1
                if work is not None:
                    self._waiting -= 1
            if work is None:
                return
            future, function, args = work
            if future.set_running_or_notify_cancel():
                try:
                    future.set_result(function(*args))
                except BaseException as error:
                    future.set_exception(error)
