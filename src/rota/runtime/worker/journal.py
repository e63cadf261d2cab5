"""A workflow run's journal: ``ctx.step`` and ``ctx.sleep`` for one attempt of one job.

A run replays from the top each time the job runs again (a retry, a resume after a sleep): the
journal reads the job's saved steps once, at its first step, and answers each step it has
already saved with the saved result instead of calling the function again. A step that is not
saved yet runs, and its JSON result is committed, fenced by the job's lease, before ``step``
returns (``WorkflowStore.save``); it returns the value as saved (JSON's round trip), the same value
a replay returns. A worker that lost the lease meanwhile saves nothing and the attempt ends
with ``LeaseLost``.

A sleep is a step whose result is the moment it ends: the first run saves it and parks the job
(``Parked``: pending again at that moment, no attempt spent, the slot freed); a later run finds
it saved and returns at once once that moment has passed.

For an async handler ``step`` and ``sleep`` return awaitables and the store is called from the
worker's database threads; for a sync handler they block in the handler's own thread.
"""

from __future__ import annotations

import asyncio
import inspect
import json
from collections.abc import Awaitable, Callable, Mapping
from datetime import datetime, timedelta
from typing import Any

from rota.core import checks
from rota.core.checks import LATEST
from rota.core.clock import Clock
from rota.core.model import Job
from rota.core.names import name_problem
from rota.core.workflow import Occurrences, Step
from rota.errors import InvalidArguments, InvalidResult, LeaseLost
from rota.runtime.services import results
from rota.store.base import WorkflowStore
from rota.store.values import Taken

DbCall = Callable[..., Awaitable[Any]]
"""Runs a store method in the worker's database threads."""


WAIT = "wait_for:"
"""What a wait's step is named after: ``wait_for:<signal>``, numbered like any step."""


class Parked(BaseException):
    """Raised by ``ctx.sleep`` and ``ctx.wait_for`` to end the attempt until ``until`` (for a
    wait, or until ``signal`` arrives): a ``BaseException`` so that a handler's ``except
    Exception`` cannot swallow it; the executor turns it into the park."""

    def __init__(self, until: datetime, signal: str | None = None) -> None:
        waiting = "" if signal is None else f"waiting for {signal!r} "
        super().__init__(f"{waiting}until {until.isoformat()}")
        self.until = until
        self.signal = signal


class Journal:
    def __init__(
        self,
        job: Job,
        store: WorkflowStore,
        clock: Clock,
        max_result_bytes: int,
        db_call: DbCall | None,
    ) -> None:
        """``db_call`` runs the store's methods for an async handler; ``None`` for a sync
        one, whose thread calls them itself."""
        self.job = job
        self.store = store
        self.clock = clock
        self.max_result_bytes = max_result_bytes
        self.db_call = db_call
        self.names = Occurrences()
        self._saved: dict[str, Step] | None = None
        self._woke = job.waiting_for
        """The signal the job was parked waiting for, until the run reaches its wait."""

    def step(self, name: str, fn: Callable[..., Any], args: tuple[Any, ...], kwargs: Any) -> Any:
        key = self.names.next(name)
        if not callable(fn):
            raise InvalidArguments(f"step {name!r}: {fn!r} is not callable")
        if self.db_call is not None:
            return self._astep(key, fn, args, kwargs)
        saved = self._saved_sync().get(key)
        if saved is not None:
            return saved.result
        return self._save_sync(key, called(fn, args, kwargs))

    def sleep(self, name: str, duration: float | timedelta) -> Any:
        key = self.names.next(name)
        length = checks.duration(duration, InvalidArguments, f"sleep {name!r} duration")
        if self.db_call is not None:
            return self._asleep(key, length)
        saved = self._saved_sync().get(key)
        if saved is None:
            until = self._wake_up(length)
            self._save_sync(key, until.isoformat())
        else:
            until = _moment(saved)
        self._park_unless_over(until)
        return None

    def wait_for(self, signal: str, timeout: float | timedelta | None) -> Any:
        problem = name_problem("signal", signal)
        if problem is not None:
            raise InvalidArguments(problem)
        key = self.names.next(WAIT + signal)
        length = None if timeout is None else checks.duration(timeout, InvalidArguments, "timeout")
        if self.db_call is not None:
            return self._await_signal(key, signal, length)
        saved = self._saved_sync().get(key)
        if saved is not None:
            return saved.result
        timed_out = self._timed_out(signal)
        taken = self.store.take(*self._held(), signal, key, self.clock.now(), timed_out)
        return self._taken(key, signal, length, taken)

    async def _await_signal(self, key: str, signal: str, length: timedelta | None) -> Any:
        assert self.db_call is not None
        saved = (await self._saved_async()).get(key)
        if saved is not None:
            return saved.result
        held, timed_out, now = self._held(), self._timed_out(signal), self.clock.now()
        taken = await self.db_call(self.store.take, *held, signal, key, now, timed_out)
        return self._taken(key, signal, length, taken)

    def _taken(self, key: str, signal: str, length: timedelta | None, taken: Taken | None) -> Any:
        """What the wait returns: the signal taken (``None`` for one that timed out), or the
        park until one comes."""
        if taken is None:
            raise self._lost(key)
        if not taken.found:
            raise Parked(self._deadline(length), signal)
        return self._kept(key, taken.payload, self.clock.now())

    def _timed_out(self, signal: str) -> bool:
        """Whether the first wait this run reaches unanswered, for ``signal``, is the one the
        job parked at and timed out: the job still names the signal, and its ``run_at``, the
        wait's end, has passed. Asked once a run: a later wait is a new one."""
        woke, self._woke = self._woke, None
        return woke == signal and self.job.run_at <= self.clock.now()

    def _deadline(self, length: timedelta | None) -> datetime:
        return LATEST if length is None else self._wake_up(length)

    async def _astep(
        self, key: str, fn: Callable[..., Any], args: tuple[Any, ...], kwargs: Any
    ) -> Any:
        saved = (await self._saved_async()).get(key)
        if saved is not None:
            return saved.result
        value = fn(*args, **kwargs)
        if inspect.isawaitable(value):
            value = await value
        return await self._save_async(key, value)

    async def _asleep(self, key: str, length: timedelta) -> None:
        saved = (await self._saved_async()).get(key)
        if saved is None:
            until = self._wake_up(length)
            await self._save_async(key, until.isoformat())
        else:
            until = _moment(saved)
        self._park_unless_over(until)

    def _wake_up(self, length: timedelta) -> datetime:
        return checks.later(self.clock.now(), length, InvalidArguments)

    def _park_unless_over(self, until: datetime) -> None:
        if self.clock.now() < until:
            raise Parked(until)

    def _saved_sync(self) -> Mapping[str, Step]:
        if self._saved is None:
            self._saved = {step.name: step for step in self.store.saved(self.job.id)}
        return self._saved

    async def _saved_async(self) -> Mapping[str, Step]:
        assert self.db_call is not None
        if self._saved is None:
            steps = await self.db_call(self.store.saved, self.job.id)
            self._saved = {step.name: step for step in steps}
        return self._saved

    def _save_sync(self, key: str, value: Any) -> Any:
        encoded = self._encoded(key, value)
        now = self.clock.now()
        if not self.store.save(*self._held(), key, encoded, now):
            raise self._lost(key)
        return self._kept(key, encoded, now)

    async def _save_async(self, key: str, value: Any) -> Any:
        assert self.db_call is not None
        encoded = self._encoded(key, value)
        now = self.clock.now()
        if not await self.db_call(self.store.save, *self._held(), key, encoded, now):
            raise self._lost(key)
        return self._kept(key, encoded, now)

    def _encoded(self, key: str, value: Any) -> str | None:
        try:
            return results.encode(value, self.max_result_bytes)
        except InvalidResult as error:
            raise InvalidResult(f"step {key!r}: {error}") from None

    def _held(self) -> tuple[int, str, int]:
        return self.job.id, self.job.lease_owner or "", self.job.attempt

    def _kept(self, key: str, encoded: str | None, now: datetime) -> Any:
        value = None if encoded is None else json.loads(encoded)
        if self._saved is not None:
            self._saved[key] = Step(key, value, now)
        return value

    def _lost(self, key: str) -> LeaseLost:
        return LeaseLost(
            f"job {self.job.id} lost its lease while step {key!r} ran: the step was not saved"
        )


def called(fn: Callable[..., Any], args: tuple[Any, ...], kwargs: Any) -> Any:
    """What a step's function returns in a thread: awaited in a loop of its own when it is a
    coroutine function's (an async function may be a sync handler's step)."""
    value = fn(*args, **kwargs)
    return asyncio.run(_awaited(value)) if inspect.isawaitable(value) else value


async def _awaited(value: Awaitable[Any]) -> Any:
    return await value


def _moment(saved: Step) -> datetime:
    return datetime.fromisoformat(str(saved.result))
