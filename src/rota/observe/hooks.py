"""Running hooks where they cannot hurt the worker.

A hook is user code, called for every event it listens to: a webhook that takes seconds, a bug
that raises, even ``KeyboardInterrupt``.  None of that may stall a worker's event loop, drop an
outcome or make a job run twice.  So:

* sync hooks run off the event loop, on ``LANES`` threads; an event goes to the lane of its job
  (events of no job share one lane), so one job's events, and the process's, reach a hook in
  the order emitted;
* a hook still running after ``hook_timeout`` seconds is logged and abandoned: its lane goes on
  with a new thread, and the old one ends when the hook returns;
* whatever a hook raises, ``BaseException`` included, is logged and contained;
* a lane holds at most ``CAPACITY`` waiting calls; beyond, calls are dropped and counted, with
  a warning, never by blocking whoever emitted the event;
* async hooks run on the event loop they are given (the worker's), each under ``hook_timeout``,
  with what they raise contained the same way; they too are dropped past ``CAPACITY`` pending.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import queue
import threading
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

DEFAULT_HOOK_TIMEOUT = 10.0
"""Seconds a hook may run before it is abandoned (``Rota(hook_timeout=...)``)."""
LANES = 4
CAPACITY = 1_000
WATCH_EVERY = 0.5
logger = logging.getLogger("rota.hooks")

Call = Callable[[], Any]


def is_async(hook: Callable[..., Any]) -> bool:
    """Whether calling ``hook`` makes a coroutine (an ``async def``, or an object whose
    ``__call__`` is one)."""
    return inspect.iscoroutinefunction(hook) or inspect.iscoroutinefunction(
        getattr(hook, "__call__", None)  # noqa: B004
    )


@dataclass
class _Lane:
    index: int
    calls: queue.Queue[tuple[str, Call]] = field(default_factory=lambda: queue.Queue(CAPACITY))
    thread: threading.Thread | None = None
    running: tuple[str, float] | None = None
    """What the lane's thread runs now, and since when (monotonic)."""


class HookRunner:
    def __init__(self, timeout: float) -> None:
        self.timeout = timeout
        self.dropped = 0
        self._lock = threading.Lock()
        self._lanes = [_Lane(index) for index in range(LANES)]
        self._watchdog: threading.Thread | None = None
        self._pending: set[asyncio.Future[None]] = set()

    def submit(self, key: object, name: str, call: Call) -> None:
        """Run ``call`` (a sync hook bound to its event) on the lane of ``key``."""
        lane = self._lanes[hash(key) % LANES]
        try:
            lane.calls.put_nowait((name, call))
        except queue.Full:
            self._drop(name)
            return
        with self._lock:
            if lane.thread is None:
                self._start(lane)
            if self._watchdog is None:
                self._watchdog = threading.Thread(
                    target=self._watch, name="rota-hooks-watchdog", daemon=True
                )
                self._watchdog.start()

    def schedule(
        self,
        name: str,
        work: Callable[[], Awaitable[Any]],
        loop: asyncio.AbstractEventLoop | None,
    ) -> None:
        """Run an async hook on ``loop`` (the caller's running loop first), under the timeout;
        with no loop, on a lane as a sync call would."""
        try:
            running: asyncio.AbstractEventLoop | None = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        target = running or (loop if loop is not None and loop.is_running() else None)
        if target is None:
            self.submit(name, name, lambda: asyncio.run(self._guarded(name, work)))
            return
        if len(self._pending) >= CAPACITY:
            self._drop(name)
            return
        if target is running:
            self._track(target.create_task(self._guarded(name, work)))
        else:
            target.call_soon_threadsafe(self._spawn, target, name, work)

    def _spawn(
        self, loop: asyncio.AbstractEventLoop, name: str, work: Callable[[], Awaitable[Any]]
    ) -> None:
        self._track(loop.create_task(self._guarded(name, work)))

    def _track(self, task: asyncio.Future[None]) -> None:
        self._pending.add(task)
        task.add_done_callback(self._pending.discard)

    async def _guarded(self, name: str, work: Callable[[], Awaitable[Any]]) -> None:
        """Run an async hook as a task of its own, cancelled past the timeout.  What it raises
        is caught inside that task: a ``SystemExit`` or ``KeyboardInterrupt`` escaping a task
        would be raised out of the event loop itself."""
        ours = [False]

        async def contained() -> None:
            try:
                await work()
            except asyncio.CancelledError:
                if ours[0]:
                    raise
                logger.exception("a hook for %s raised", name)
            except BaseException:  # SystemExit, KeyboardInterrupt...: the hook's, contained
                logger.exception("a hook for %s raised", name)

        task = asyncio.ensure_future(contained())
        done, _ = await asyncio.wait({task}, timeout=self.timeout)
        if not done:
            ours[0] = True
            task.cancel()
            logger.warning(
                "an async hook for %s ran longer than hook_timeout (%g s) and was cancelled",
                name,
                self.timeout,
            )

    def _start(self, lane: _Lane) -> None:
        thread = threading.Thread(
            target=self._serve, args=(lane,), name=f"rota-hooks-{lane.index}", daemon=True
        )
        lane.thread = thread
        thread.start()

    def _serve(self, lane: _Lane) -> None:
        """A lane's thread: run its calls in order until another thread replaces it."""
        me = threading.current_thread()
        while lane.thread is me:
            name, call = lane.calls.get()
            lane.running = (name, time.monotonic())
            try:
                call()
            except BaseException:  # KeyboardInterrupt, SystemExit...: the hook's, contained
                logger.exception("a hook for %s raised", name)
            finally:
                with self._lock:
                    if lane.thread is me:
                        lane.running = None
                lane.calls.task_done()

    async def settle(self) -> None:
        """Wait until the hooks called so far have run, up to the timeout: the async ones of
        this event loop, then every lane (``drain`` returns once its events were heard)."""
        pending = [task for task in self._pending if task.get_loop() is asyncio.get_running_loop()]
        if pending:
            await asyncio.wait(pending, timeout=self.timeout)
        await asyncio.to_thread(self._settle_lanes, time.monotonic() + self.timeout)

    def _settle_lanes(self, deadline: float) -> None:
        for lane in self._lanes:
            calls = lane.calls
            with calls.all_tasks_done:
                while calls.unfinished_tasks and time.monotonic() < deadline:
                    calls.all_tasks_done.wait(deadline - time.monotonic())

    def _watch(self) -> None:
        while True:
            time.sleep(WATCH_EVERY)
            self.abandon_overdue(time.monotonic())

    def abandon_overdue(self, now: float) -> list[str]:
        """Abandon each lane's thread whose hook has run past the timeout by the monotonic
        ``now``: its lane goes on with a new thread.  The events of the hooks abandoned."""
        abandoned = []
        for lane in self._lanes:
            with self._lock:
                running = lane.running
                if running is None or now - running[1] < self.timeout:
                    continue
                lane.running = None
                self._start(lane)
            abandoned.append(running[0])
            logger.warning(
                "a hook for %s ran longer than hook_timeout (%g s): abandoned, its lane goes "
                "on without it",
                running[0],
                self.timeout,
            )
        return abandoned

    def _drop(self, name: str) -> None:
        with self._lock:
            self.dropped += 1
            dropped = self.dropped
        if dropped == 1 or dropped % CAPACITY == 0:
            logger.warning(
                "hooks fall behind: %d call(s) dropped so far (this one for %s); a lane holds "
                "at most %d waiting calls",
                dropped,
                name,
                CAPACITY,
            )


def bound(hook: Callable[[Any], Any], event: Any) -> Callable[[], Awaitable[Any]]:
    """An async hook's call for one event, made when it runs (not when it is queued)."""

    async def call() -> Any:
        return await hook(event)

    return call


def sync_call(hook: Callable[[Any], Any], event: Any, runner: HookRunner) -> Call:
    """A sync hook's call for one event; should it return an awaitable after all (a lambda
    around an async function), that is run on the lane as an async hook would be."""

    def call() -> None:
        result = hook(event)
        if inspect.isawaitable(result):
            asyncio.run(runner._guarded(event.name, lambda: result))

    return call
