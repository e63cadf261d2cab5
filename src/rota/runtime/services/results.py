"""Handlers' results: encoded as JSON when a handler returns, awaited by ``rota.result``.

A result is checked where it is made (in the handler's thread, task or child process), so a
value that is not JSON, or larger than ``max_result_bytes``, fails that attempt with
``INVALID_RESULT`` instead of failing the batched write that carries other jobs' outcomes.

A waiter reads the job's state alone (``Store.job_state``: never its arguments or its result,
which may be a mebibyte each), then sleeps: 50 ms at first, doubling up to the instance's poll
interval, so a long wait costs a short read per poll interval, not a busy loop; the whole job
is read once, when its state is final.  It is woken at once
when a worker or a drain of this process writes the job's final state (``Completions``, which
the worker's report writer signals); a job finished elsewhere is seen at the next read.  Its
sleeps and its timeout follow the instance's clock (``Timer``), so a ``VirtualClock`` drives
them in tests.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import threading
from collections.abc import Callable, Iterable, Iterator
from datetime import timedelta
from typing import Any

from rota.core import checks, payload
from rota.core.backoff import doubling
from rota.core.clock import Clock
from rota.core.model import Job, JobState
from rota.errors import (
    ErrorCode,
    InvalidArguments,
    InvalidResult,
    JobCancelled,
    JobFailed,
    JobNotFound,
    ResultTimeout,
    RotaError,
)
from rota.runtime.timer import Timer

FIRST_POLL = 0.05


def encode(
    value: Any,
    max_bytes: int,
    what: str = "result",
    error: type[RotaError] = InvalidResult,
) -> str | None:
    """A handler's return value (or another value kept as JSON, ``what`` naming it in the
    messages) as JSON text (``None`` stays ``None``: no value), or ``error`` (``InvalidResult``)
    saying why it cannot be kept."""
    if value is None:
        return None
    try:
        text = json.dumps(value, ensure_ascii=False, allow_nan=False, separators=(",", ":"))
        size = len(text.encode())
    except (TypeError, ValueError, RecursionError) as problem:
        raise error(
            f"the {what} is a {type(value).__qualname__} that is not JSON: {problem}"
        ) from None
    brackets = text.count("[") + text.count("{")
    if brackets > payload.MAX_NESTING and payload.nested_deeper(value, payload.MAX_NESTING):
        raise error(f"the {what} is nested more than {payload.MAX_NESTING} levels deep")
    if size > max_bytes:
        raise error(f"the {what} is {size} bytes as JSON, over the {max_bytes} limit")
    return text


class Completions:
    """Who in this process waits for which job, and the wake-up when its final state is written.

    Thread-safe: waiters register from their own event loops (``rota.result`` runs one per
    call), the worker signals from its loop.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._waiters: dict[int, list[Callable[[], None]]] = {}

    @contextlib.contextmanager
    def watching(self, job_id: int, wake: Callable[[], None]) -> Iterator[None]:
        with self._lock:
            self._waiters.setdefault(job_id, []).append(wake)
        try:
            yield
        finally:
            with self._lock:
                waiters = self._waiters.get(job_id, [])
                if wake in waiters:
                    waiters.remove(wake)
                if not waiters:
                    self._waiters.pop(job_id, None)

    def finished(self, job_ids: Iterable[int]) -> None:
        """These jobs' final states are written: wake their waiters."""
        with self._lock:
            if not self._waiters:
                return
            woken = [wake for job_id in job_ids for wake in self._waiters.get(job_id, ())]
        for wake in woken:
            wake()


def outside_event_loop(call: str, instead: str) -> None:
    """A blocking wait called from a coroutine would block the loop a local worker needs."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return
    raise InvalidArguments(f"{call} blocks; in async code use {instead}")


async def wait(
    read_state: Callable[[int], JobState | None],
    read: Callable[[int], Job | None],
    clock: Clock,
    completions: Completions,
    poll_interval: float,
    job_id: int,
    timeout: float | timedelta | None,
) -> Any:
    """The result of job ``job_id`` once it is final (``outcome``); ``ResultTimeout`` after
    ``timeout`` seconds (a ``timedelta`` too); ``JobNotFound`` if there is no such job.
    ``read_state`` reads the job's state, ``read`` the whole job once that state is final."""
    if timeout is not None:
        timeout = checks.seconds(timeout, InvalidArguments, "timeout")
    timer = Timer(clock)
    loop = asyncio.get_running_loop()
    woken = asyncio.Event()

    def wake() -> None:
        with contextlib.suppress(RuntimeError):  # the waiter's loop has closed
            loop.call_soon_threadsafe(woken.set)

    deadline = timer.after(timeout) if timeout is not None else None
    try:
        with completions.watching(job_id, wake):
            polls = 0
            while True:
                woken.clear()
                state = await asyncio.to_thread(read_state, job_id)
                if state is not None and state.is_final:
                    job = await asyncio.to_thread(read, job_id)
                    if job is not None and job.state.is_final:
                        return outcome(job)
                    state = job.state if job is not None else None  # retried or pruned since
                if state is None:
                    raise JobNotFound(f"job {job_id} does not exist")
                if deadline is not None and deadline.done():
                    raise ResultTimeout(f"job {job_id} is still {state.value} after {timeout:g} s")
                polls += 1
                poll = timer.after(doubling(FIRST_POLL, poll_interval, polls))
                signal = asyncio.ensure_future(woken.wait())
                try:
                    await asyncio.wait(
                        {poll, signal, *([deadline] if deadline else [])},
                        return_when=asyncio.FIRST_COMPLETED,
                    )
                finally:
                    poll.cancel()
                    signal.cancel()
    finally:
        if deadline is not None:
            deadline.cancel()


def outcome(job: Job) -> Any:
    """What ``rota.result`` gives for a final job: its result, or the error it ended with."""
    if job.state is JobState.SUCCEEDED:
        return job.result
    last = job.errors[-1] if job.errors else None
    if job.state is JobState.CANCELLED:
        # Only a dependency's failure cancels with an error of its own; earlier errors of a
        # job cancelled by hand are not why it ended.
        why = (
            f": {last.code}: {last.message}"
            if last and last.code == ErrorCode.DEPENDENCY_FAILED
            else ""
        )
        raise JobCancelled(f"job {job.id} was cancelled{why}")
    why = f": {last.code}: {last.message}" if last is not None else ""
    raise JobFailed(f"job {job.id} failed{why}", error=last)
