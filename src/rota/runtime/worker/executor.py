"""Run one claimed job: call its handler with a timeout and interruption, decide its transition.

How an attempt ends decides the outcome: a return value is the result (as JSON, checked in
the handler's own thread, task or child; ``INVALID_RESULT`` and no retry when it cannot be
kept); ``Snooze`` puts the job off without spending the attempt; ``Retry`` fails the attempt
and retries within ``retries`` whatever ``retry_on`` says, after its own delay if it gives one;
``Fail`` fails the job at once (``FAILED_BY_HANDLER``); any other exception is retried as the
task's ``retry_on`` / ``no_retry_on`` allow.  A timeout, like a lost lease or an isolated child
that died without an outcome, is rota's finding, not an exception of the handler's: it is
retried within ``retries`` whatever the filters say.
"""

from __future__ import annotations

import asyncio
import logging
import random
import time
from concurrent.futures import Future
from dataclasses import dataclass, replace
from enum import Enum
from typing import Any, Literal

from rota.config import DEFAULT_MAX_RESULT_BYTES, DEFAULT_MAX_SNOOZES
from rota.context import JobContext
from rota.core.backoff import RetryPolicy, lineage
from rota.core.clock import Clock
from rota.core.failures import message_of, traceback_of
from rota.core.model import AttemptError, Job
from rota.core.transitions import Transition, Verdict, VerdictKind, after_attempt
from rota.errors import (
    ErrorCode,
    ExecutionFailed,
    InvalidArguments,
    InvalidResult,
    JobTimeout,
    RotaError,
    TaskNotRegistered,
)
from rota.observe.events import EventLog
from rota.outcomes import Fail, Retry, Snooze
from rota.runtime.services import results
from rota.runtime.timer import Timer
from rota.runtime.worker import isolation
from rota.runtime.worker.journal import DbCall, Journal, Parked
from rota.runtime.worker.progress import ProgressBoard
from rota.runtime.worker.threads import Threads
from rota.store.base import WorkflowStore
from rota.tasks import TaskDefinition, TaskRegistry

MAX_MESSAGE = 2_000
MAX_TRACEBACK = 16_000


class Interrupt(Enum):
    """Why a running attempt is stopped: its cancel was asked (it ends ``cancelled``), or its
    worker is shutting down or lost its lease (it is released)."""

    CANCEL = "cancel"
    SHUTDOWN = "shutdown"


class HandlerExit(Exception):
    """A handler raised what must not escape as it is, carried as an ordinary failure.

    ``SystemExit`` and ``KeyboardInterrupt`` would be re-raised out of the event loop, an
    asyncio future refuses ``StopIteration`` (the job would stay ``running`` for ever), and any
    other ``BaseException`` would pass the worker's ``except Exception``: each is recorded as a
    failed attempt instead, its original as the cause.
    """


@dataclass
class Attempt:
    """One attempt as the executor decided it: the completer writes its ``transition``, then
    announces it (``runtime.announcer``) if it applied."""

    job: Job
    verdict: Verdict
    transition: Transition
    duration: float
    """Seconds the handler ran."""
    error: BaseException | None = None
    """What the handler raised (or rota found: a timeout), for telemetry."""
    leftover: asyncio.Future[Any] | None = None
    """A handler still running after its attempt ended (a thread that ignored ``cancelled``)."""
    span: Any = None
    """The attempt's trace span, begun by the worker, ended when it is announced."""


class Executor:
    def __init__(
        self,
        registry: TaskRegistry,
        clock: Clock,
        threads: Threads,
        rng: random.Random | None = None,
        max_snoozes: int = DEFAULT_MAX_SNOOZES,
        max_result_bytes: int = DEFAULT_MAX_RESULT_BYTES,
        events: EventLog | None = None,
        workflow: WorkflowStore | None = None,
        db_call: DbCall | None = None,
    ) -> None:
        """``events`` hears an isolated child killed for not stopping (``isolation``): how an
        attempt ended is announced once written, not here. ``workflow`` keeps workflow steps
        and signals (``journal``), which an async handler's journal reaches through
        ``db_call``."""
        self.timer = Timer(clock)
        self.events = events or EventLog()
        self.registry = registry
        self.clock = clock
        self.threads = threads
        self.rng = rng or random.Random()
        self.max_snoozes = max_snoozes
        self.max_result_bytes = max_result_bytes
        self.workflow = workflow
        self.db_call = db_call
        self.progress = ProgressBoard()
        """Handlers' latest ``ctx.progress``, which the worker's heartbeat writes."""
        self._policies: dict[str, tuple[TaskDefinition | None, RetryPolicy]] = {}

    def policy(self, task: str) -> RetryPolicy:
        """The task's policy; the ``Rota``'s ``max_snoozes`` where the task sets none (made
        once per definition: every attempt asks)."""
        definition = self.registry.find(task)
        known = self._policies.get(task)
        if known is not None and known[0] is definition:
            return known[1]
        policy = definition.policy if definition else RetryPolicy()
        if policy.max_snoozes is None:
            policy = replace(policy, max_snoozes=self.max_snoozes)
        self._policies[task] = (definition, policy)
        return policy

    async def run(self, job: Job, interrupt: asyncio.Future[Interrupt]) -> Attempt:
        """Run ``job`` until it returns, raises, times out or ``interrupt`` gets a reason;
        decide where it goes.  Nothing is written, logged or announced here."""
        definition = self.registry.find(job.task)
        refusal = _refusal(job, definition)
        if definition is None or refusal is not None:
            assert refusal is not None
            verdict = Verdict(VerdictKind.FAILED, self._error(job, refusal), retryable=False)
            return self._decide(job, verdict, 0.0, refusal)
        ctx = JobContext(
            job_id=job.id,
            task=job.task,
            queue=job.queue,
            attempt=job.attempt,
            scheduled_at=job.scheduled_at,
            manual=job.manual,
            batch=job.batch_id,
            logger=logging.LoggerAdapter(
                definition.logger,
                {"job_id": job.id, "task": job.task, "attempt": job.attempt},
            ),
            on_progress=self.progress.reporter(job.id, job.attempt),
        )
        if self.workflow is not None:
            call = self.db_call if definition.is_async else None
            ctx.workflow = Journal(job, self.workflow, self.clock, self.max_result_bytes, call)
        started = time.monotonic()
        runner, thread = self._start(definition, ctx, job)
        timeout = self.timer.after(definition.timeout) if definition.timeout else None
        try:
            await _first(runner, interrupt, timeout)
        finally:
            if timeout is not None:
                timeout.cancel()
        duration = time.monotonic() - started
        if runner.done():
            verdict, raised = self._result(job, runner)
            return self._decide(job, verdict, duration, raised)
        ctx.cancelled.set()
        leftover = _cancel(runner, thread)
        timed_out: JobTimeout | None = None
        if interrupt.done():
            cancel = interrupt.result() is Interrupt.CANCEL
            verdict = Verdict(VerdictKind.CANCELLED if cancel else VerdictKind.RELEASED)
        else:
            timed_out = JobTimeout(f"job {job.id} timed out after {definition.timeout} s")
            verdict = Verdict(VerdictKind.TIMED_OUT, self._error(job, timed_out))
        attempt = self._decide(job, verdict, duration, timed_out)
        attempt.leftover = leftover
        return attempt

    def _start(
        self, definition: TaskDefinition, ctx: JobContext, job: Job
    ) -> tuple[asyncio.Future[Any], Future[Any] | None]:
        limit = self.max_result_bytes
        if definition.is_async:
            return asyncio.ensure_future(_guarded_async(definition, ctx, job, limit)), None
        if definition.isolation == "process":
            # A task that stops its child process when cancelled, done once the child exited:
            # ``_cancel`` then needs nothing more than for an async handler.
            return asyncio.ensure_future(
                isolation.run(definition, ctx, job, limit, self.events)
            ), None
        thread = self.threads.submit(_guarded_sync, definition, ctx, job, limit)
        return asyncio.wrap_future(thread), thread

    def _result(
        self, job: Job, runner: asyncio.Future[Any]
    ) -> tuple[Verdict, BaseException | None]:
        if runner.cancelled():
            cancelled = asyncio.CancelledError("the handler cancelled itself")
            return Verdict(VerdictKind.FAILED, self._error(job, cancelled)), cancelled
        exc = runner.exception()
        if exc is None:
            return Verdict(VerdictKind.SUCCEEDED, result=runner.result()), None
        if isinstance(exc, Snooze):
            return Verdict(VerdictKind.SNOOZED, delay=exc.delay), None
        if isinstance(exc, Parked):
            kind = VerdictKind.PARKED if exc.signal is None else VerdictKind.WAITING
            return Verdict(kind, until=exc.until, signal=exc.signal), None
        error = self._error(job, exc)
        if isinstance(exc, Retry):
            return Verdict(VerdictKind.FAILED, error, delay=exc.delay), exc
        if isinstance(exc, (Fail, InvalidResult)):
            return Verdict(VerdictKind.FAILED, error, retryable=False), exc
        if isinstance(exc, ExecutionFailed):  # an isolated child died without an outcome
            return Verdict(VerdictKind.FAILED, error), exc
        retryable = self.policy(job.task).retries_error(lineage(_shown(exc)))
        return Verdict(VerdictKind.FAILED, error, retryable=retryable), exc

    def _error(self, job: Job, exc: BaseException) -> AttemptError:
        shown = _shown(exc)
        if isinstance(shown, RotaError):
            code = shown.code
        else:
            code = ErrorCode.FAILED_BY_HANDLER if isinstance(shown, Fail) else ExecutionFailed.code
        formatted = traceback_of(shown)
        return AttemptError(
            attempt=job.attempt,
            at=self.clock.now(),
            code=code,
            type=f"{type(shown).__module__}.{type(shown).__qualname__}",
            message=message_of(shown)[:MAX_MESSAGE],
            traceback=formatted[-MAX_TRACEBACK:],
            worker=job.lease_owner,
        )

    def _decide(
        self, job: Job, verdict: Verdict, duration: float, error: BaseException | None
    ) -> Attempt:
        transition = after_attempt(job, verdict, self.clock.now(), self.policy(job.task), self.rng)
        return Attempt(job, verdict, transition, duration, error)


async def _first(*futures: asyncio.Future[Any] | None) -> None:
    """Until the first of ``futures`` is done: ``asyncio.wait`` for one, without its sets and
    its waiter's bookkeeping, which every attempt paid for."""
    waiting = [future for future in futures if future is not None]
    first = asyncio.get_running_loop().create_future()

    def done(_: asyncio.Future[Any]) -> None:
        if not first.done():
            first.set_result(None)

    for future in waiting:
        future.add_done_callback(done)
    try:
        await first
    finally:
        for future in waiting:
            future.remove_done_callback(done)


def _refusal(job: Job, definition: TaskDefinition | None) -> RotaError | None:
    """Why ``job`` cannot run at all, so that no later attempt would do better: its task is
    unknown here, its arguments unreadable, or they do not fit the handler (a job queued by
    name from a process that does not define the task)."""
    if definition is None:
        return TaskNotRegistered(f"task {job.task!r} is not registered in this worker")
    if job.payload_error is not None:
        return InvalidArguments(f"job {job.id} cannot be run: {job.payload_error}")
    problem = definition.argument_problem(job.args, job.kwargs)
    if problem is not None:
        return InvalidArguments(f"job {job.id} of task {job.task!r}: {problem}")
    return None


def _cancel(runner: asyncio.Future[Any], thread: Future[Any] | None) -> asyncio.Future[Any]:
    """Cancel a handler; return what completes once it has really stopped.

    A task ends when it handles the cancellation.  A thread cannot be stopped, so that is a
    fresh wrapper of its future, done when the thread returns: its slot stays busy until then.
    """
    runner.cancel()
    return asyncio.wrap_future(thread) if thread is not None else runner


class _Carried:
    """Lets a handler's ordinary exceptions through and turns what must not escape as it is
    (``StopIteration``, ``SystemExit``, any other ``BaseException``) into ``HandlerExit``; the
    worker's own cancellation of a task passes untouched."""

    def __enter__(self) -> None:
        return None

    def __exit__(self, kind: object, exc: BaseException | None, tb: object) -> Literal[False]:
        ordinary = isinstance(exc, Exception) and not isinstance(exc, StopIteration)
        if exc is None or ordinary or isinstance(exc, (asyncio.CancelledError, Parked)):
            return False
        raise _exit(exc) from exc


async def _guarded_async(
    definition: TaskDefinition, ctx: JobContext, job: Job, max_result_bytes: int
) -> str | None:
    with _Carried():
        value = await definition.call(ctx, job.args, job.kwargs)
    return results.encode(value, max_result_bytes)


def _guarded_sync(
    definition: TaskDefinition, ctx: JobContext, job: Job, max_result_bytes: int
) -> str | None:
    with _Carried():
        value = definition.call(ctx, job.args, job.kwargs)
    return results.encode(value, max_result_bytes)


def _shown(exc: BaseException) -> BaseException:
    """What the handler raised: the original of a ``HandlerExit``."""
    return exc.__cause__ if isinstance(exc, HandlerExit) and exc.__cause__ else exc


def _exit(exc: BaseException) -> HandlerExit:
    return HandlerExit(f"handler raised {type(exc).__name__}({message_of(exc)})")
