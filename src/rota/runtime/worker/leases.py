"""Keeping a worker's leases: renewed from a thread of its own, whatever its event loop does.

A job's lease is the only thing that tells other workers its handler may still run
(invariant 3), so its renewal must not wait on anything user code can hold up: an async
handler that blocks the event loop (``time.sleep``, CPU work), a hook, a saturated pool of
database threads.  ``LeaseKeeper`` runs in a thread with an event loop of its own (so that a
``VirtualClock`` drives its waits in tests as it drives the worker's): every third of the lease
it measures the database server's clock (``runtime.timeline``), renews the leases of the jobs in
``Holdings``, writes their progress, and hands the worker the jobs someone asked to cancel or
another worker took.  It also watches the worker's event loop: a loop that has not run a
callback for ``BLOCKED_LOOP`` seconds is logged once, with the stack of what holds it.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import sys
import threading
import time
import traceback
from collections.abc import Callable, Iterable

from rota.core.clock import Clock
from rota.core.events import EventName
from rota.core.model import ProgressReport
from rota.core.transitions import lease_until
from rota.observe.events import EventLog
from rota.runtime.timeline import TimeLine
from rota.runtime.timer import Timer
from rota.runtime.worker.backoff import LoopBackoff
from rota.runtime.worker.executor import Interrupt
from rota.runtime.worker.progress import ProgressBoard
from rota.store.base import Store

BLOCKED_LOOP = 1.0
"""Seconds the worker's event loop may go without running a callback before it is logged."""
WATCH_EVERY = 0.5
STOP_WAIT = 0.5
"""Seconds ``stop`` waits for the thread to end: at once, unless a renewal is in a statement
(a stopping worker does not wait for it: its leases then run out a little later)."""
logger = logging.getLogger("rota.worker")


class Holdings:
    """The jobs a worker holds: claimed, running, or finished and not yet written.  Changed on
    the worker's loop, read by the keeper's thread."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._ids: set[int] = set()

    def add(self, job_ids: Iterable[int]) -> None:
        with self._lock:
            self._ids.update(job_ids)

    def discard(self, job_ids: Iterable[int]) -> None:
        with self._lock:
            self._ids.difference_update(job_ids)

    def snapshot(self) -> list[int]:
        with self._lock:
            return sorted(self._ids)


class LeaseKeeper:
    def __init__(
        self,
        worker_id: str,
        store: Store,
        clock: Clock,
        timeline: TimeLine | None,
        lease_seconds: float,
        max_backoff: float,
        holdings: Holdings,
        progress: ProgressBoard,
        events: EventLog,
    ) -> None:
        self.worker_id = worker_id
        self.events = events
        self.store = store
        self.clock = clock
        self.timeline = timeline
        self.lease_seconds = lease_seconds
        self.max_backoff = max_backoff
        self.holdings = holdings
        self.progress = progress
        self._thread: threading.Thread | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._task: asyncio.Task[None] | None = None
        self._started = threading.Event()
        self._stopping = False

    def start(self, interrupt: Callable[[int, Interrupt], None]) -> None:
        """Start renewing, from the worker's event loop: ``interrupt(job_id, reason)`` is
        called on that loop for a job to cancel (``CANCEL``) or lost (``SHUTDOWN``)."""
        worker_loop = asyncio.get_running_loop()
        loop_thread = threading.get_ident()

        def run() -> None:
            asyncio.run(self._keep(worker_loop, loop_thread, interrupt))

        self._thread = threading.Thread(target=run, name="rota-leases", daemon=True)
        self._thread.start()
        self._started.wait()

    def stop(self, wait: bool = True) -> None:
        """Stop renewing (the leases then run out unless written first); with ``wait``, let the
        thread end, for up to ``STOP_WAIT`` seconds."""
        loop, task, thread = self._loop, self._task, self._thread
        if loop is not None and task is not None and not self._stopping:
            self._stopping = True
            with contextlib.suppress(RuntimeError):  # its loop closed meanwhile
                loop.call_soon_threadsafe(task.cancel)
        if wait and thread is not None:
            thread.join(STOP_WAIT)

    async def _keep(
        self,
        worker_loop: asyncio.AbstractEventLoop,
        loop_thread: int,
        interrupt: Callable[[int, Interrupt], None],
    ) -> None:
        self._loop = asyncio.get_running_loop()
        self._task = asyncio.current_task()
        self._started.set()
        watching = asyncio.ensure_future(
            _watch(worker_loop, loop_thread, self.events, lambda: self._stopping)
        )
        try:
            await self._renewing(worker_loop, interrupt)
        except asyncio.CancelledError:
            pass
        finally:
            watching.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await asyncio.gather(watching, return_exceptions=True)

    async def _renewing(
        self,
        worker_loop: asyncio.AbstractEventLoop,
        interrupt: Callable[[int, Interrupt], None],
    ) -> None:
        """Every third of the lease: renew, write progress, hand over interruptions.  A
        renewal that fails puts its progress back for the next one and is backed off from."""
        backoff = LoopBackoff("heartbeat", self.max_backoff, self.events)
        timer = Timer(self.clock)
        while True:
            delay = self.lease_seconds / 3
            progress: list[ProgressReport] = []
            try:
                job_ids = self.holdings.snapshot()
                progress = self.progress.take(job_ids)
                cancel, lost = self._renew(job_ids, progress)
                _hand_over(worker_loop, interrupt, cancel, Interrupt.CANCEL)
                _hand_over(worker_loop, interrupt, lost, Interrupt.SHUTDOWN)
                backoff.succeeded()
            except Exception as error:
                self.progress.put_back(progress)
                delay = min(delay, backoff.failed(error))
            await timer.sleep(delay)

    def _renew(
        self, job_ids: list[int], progress: list[ProgressReport]
    ) -> tuple[set[int], set[int]]:
        """Measure the server's clock, then renew the leases from it: a lease is written on
        the time line every rescuer compares it on, however this host's clock was stepped."""
        if self.timeline is not None:
            self.timeline.measure()
        now = self.clock.now()
        until = lease_until(now, self.lease_seconds)
        return self.store.jobs.heartbeat(self.worker_id, job_ids, now, until, progress)


def _hand_over(
    loop: asyncio.AbstractEventLoop,
    interrupt: Callable[[int, Interrupt], None],
    job_ids: set[int],
    reason: Interrupt,
) -> None:
    for job_id in sorted(job_ids):
        try:
            loop.call_soon_threadsafe(interrupt, job_id, reason)
        except RuntimeError:  # the worker's loop has closed: nothing left to interrupt
            return


async def _watch(
    loop: asyncio.AbstractEventLoop,
    loop_thread: int,
    events: EventLog,
    stopping: Callable[[], bool],
) -> None:
    """Ping the worker's loop; log once when a ping waits longer than ``BLOCKED_LOOP``.  Once
    the keeper is stopping (it may outlive its worker's ``stop`` by a renewal in flight), a
    loop that nothing runs any more is its worker's end, not a block."""
    own = asyncio.get_running_loop()
    while True:
        answered = asyncio.Event()

        def answer(answered: asyncio.Event = answered) -> None:
            with contextlib.suppress(RuntimeError):  # this keeper has stopped
                own.call_soon_threadsafe(answered.set)

        sent = time.monotonic()
        try:
            loop.call_soon_threadsafe(answer)
        except RuntimeError:  # the worker's loop has closed
            return
        try:
            await asyncio.wait_for(answered.wait(), BLOCKED_LOOP)
        except asyncio.TimeoutError:
            if not stopping():
                _blocked(loop_thread, time.monotonic() - sent, events)
                await answered.wait()
                events.log(
                    logger,
                    EventName.WORKER_LOOP_UNBLOCKED,
                    logging.INFO,
                    "the worker's event loop runs again after %.1f s",
                    time.monotonic() - sent,
                )
        await asyncio.sleep(WATCH_EVERY)


def _blocked(loop_thread: int, seconds: float, events: EventLog) -> None:
    frame = sys._current_frames().get(loop_thread)
    stack = "".join(traceback.format_stack(frame)) if frame is not None else "(no stack)"
    events.log(
        logger,
        EventName.WORKER_LOOP_BLOCKED,
        logging.WARNING,
        "the worker's event loop has run nothing for %.1f s (an async handler or hook that "
        "does not yield: time.sleep, CPU work, a blocking call); leases are still renewed. "
        "What holds it:\n%s",
        seconds,
        stack,
    )
