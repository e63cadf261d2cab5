"""``isolation="process"``: each attempt of a sync handler runs in a child process of its own.

A thread cannot be stopped, and a handler that calls ``os._exit``, segfaults or exhausts memory
takes its whole process with it.  A child process can be stopped (SIGTERM, then SIGKILL
``KILL_AFTER`` seconds later) and can die alone: the attempt fails with an error naming how,
and the worker carries on.

What crosses to the child, and back:

* the handler, **by reference** (its module and qualified name, as pickle does): the child
  imports the module and looks the name up, so closures, lambdas and functions defined inside
  other functions cannot be isolated (``ConfigError`` when the task is defined);
* the arguments, as the JSON the job stores, and the return value, as the JSON the job will
  store (checked in the child: one that is not JSON, or over ``max_result_bytes``, fails the
  attempt with ``INVALID_RESULT``);
* the outcome signals ``Retry``, ``Snooze`` and ``Fail``, raised again in the worker with their
  delay or message, so they decide the attempt as in a thread, and a durable sleep's or wait's
  park;
* ``ctx.step``, ``ctx.sleep`` and ``ctx.wait_for``, over a pipe of their own to the attempt's
  journal in the worker (``isolated_steps``): a step's function runs in the child, its result is
  saved by the worker;
* a ``JobContext`` with the same ``job_id``, ``task``, ``queue``, ``attempt`` and
  ``scheduled_at``, and a logger of the same name; its ``progress`` values cross back over a
  pipe of their own as they are reported (``rota.runtime.worker.progress``).

What does not cross: objects in the parent's memory (module state is the child's own, fresh
from importing the module), logging configured in the parent (configure it again in the
child, e.g. when the handler's module is imported, to see ``ctx.logger`` records there), and
``ctx.cancelled`` as an object: the parent sends SIGTERM instead, which in the child sets
``ctx.cancelled`` and raises ``Terminated`` (a ``BaseException``) in the handler so that its
``finally`` blocks run.  A child that has not exited ``KILL_AFTER`` seconds later is SIGKILLed.
An exception the handler raises becomes the attempt's error (its type, message and traceback
text, and the names of its classes, which ``retry_on`` / ``no_retry_on`` match); an exit
without a result becomes ``EXECUTION_FAILED`` naming the exit code or signal.

Children are started with multiprocessing's ``spawn`` method (a fresh interpreter: never a fork
of the worker's threads), so the handler's module is imported once per attempt, and so is the
worker's main script, as ``__mp_main__``: a script that defines tasks keeps its start-up under
``if __name__ == "__main__":``.  POSIX only.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import multiprocessing
import os
import signal
from collections.abc import Callable
from datetime import datetime
from typing import TYPE_CHECKING, Any

from rota.context import JobContext
from rota.core.events import EventName
from rota.errors import ExecutionFailed, InvalidResult, RotaError
from rota.outcomes import Fail, Retry, Snooze
from rota.runtime.worker.isolated_child import child_main
from rota.runtime.worker.isolated_steps import JournalServer
from rota.runtime.worker.journal import Journal, Parked
from rota.runtime.worker.progress import ProgressRelay

if TYPE_CHECKING:
    from multiprocessing.process import BaseProcess

    from rota.core.model import Job
    from rota.observe.events import EventLog
    from rota.tasks import TaskDefinition

KILL_AFTER = 0.5
"""Seconds between SIGTERM and SIGKILL.  Real seconds, whatever the instance's clock: they
bound how long a real process may take to die.  Under the worker's ``INTERRUPTED_SETTLE``, so
that at shutdown a killed child counts as stopped and its job is released, not abandoned."""
_READ = 65_536

logger = logging.getLogger("rota.isolation")


class ChildFailed(RotaError):
    """The exception an isolated handler raised, rebuilt in the worker from its JSON record.

    Each one is an instance of a class made to carry the original's module and qualified name
    (and ``code``, for a rota error), so the attempt's error names the handler's exception;
    the child's traceback text is its ``__cause__``.
    """

    code = ExecutionFailed.code
    lineage: tuple[str, ...] = ()
    """The qualified names of the original exception's classes, most derived first."""


class ChildTraceback(Exception):
    """The traceback text of an exception raised in an isolated handler."""

    def __str__(self) -> str:
        return "\n" + str(self.args[0]).rstrip("\n")


async def run(
    definition: TaskDefinition, ctx: JobContext, job: Job, max_result_bytes: int, events: EventLog
) -> str | None:
    """Run one attempt in a child process; its result as JSON, or raise what went wrong.

    Cancelling this coroutine stops the child (SIGTERM, then SIGKILL) and returns only once
    the child has exited, so the caller knows the handler has really stopped.
    """
    handler = definition.handler
    spec = json.dumps(
        {
            "module": handler.__module__,
            "qualname": handler.__qualname__,
            "context": definition.takes_context,
            "args": list(job.args),
            "kwargs": job.kwargs,
            "job_id": ctx.job_id,
            "task": ctx.task,
            "queue": ctx.queue,
            "attempt": ctx.attempt,
            "scheduled_at": ctx.scheduled_at.isoformat() if ctx.scheduled_at else None,
            "manual": ctx.manual,
            "batch": ctx.batch,
            "max_result_bytes": max_result_bytes,
            "journal": isinstance(ctx.workflow, Journal),
        }
    )
    child = _Child(spec, ctx.progress, ctx.workflow if isinstance(ctx.workflow, Journal) else None)
    try:
        output = await child.finished()
    except BaseException:
        await child.stop(events)
        raise
    finally:
        child.close()
    return _outcome(output, child.exitcode, child.pid)


class _Child:
    """One child process, the pipe it writes its outcome to, and the one that keeps it alive."""

    def __init__(
        self, spec: str, report: Callable[[float, str | None], None], journal: Journal | None
    ) -> None:
        context = multiprocessing.get_context("spawn")
        self._output, child_output = context.Pipe(duplex=False)
        child_lifeline, self._lifeline = context.Pipe(duplex=False)
        self._progress, child_progress = context.Pipe(duplex=False)
        self._journal, child_journal = context.Pipe(duplex=True)
        self.process: BaseProcess = context.Process(
            target=child_main,
            args=(spec, child_output, child_lifeline, child_progress, child_journal),
            name="rota-isolated",
        )
        try:
            self.process.start()
        finally:
            child_output.close()
            child_lifeline.close()
            child_progress.close()
            child_journal.close()
        self._relay = ProgressRelay(self._progress, report)
        if journal is not None:
            JournalServer(self._journal, journal)
        self.pid = self.process.pid
        self.exitcode: int | None = None
        self._chunks: list[bytes] = []
        self._closed = False

    async def finished(self) -> bytes:
        """Wait for the child to exit; what it wrote."""
        loop = asyncio.get_running_loop()
        exited: asyncio.Future[None] = loop.create_future()
        fd, sentinel = self._output.fileno(), self.process.sentinel
        os.set_blocking(fd, False)
        loop.add_reader(fd, self._read)
        loop.add_reader(sentinel, _settle, exited)
        self._relay.start()
        try:
            await exited
        finally:
            loop.remove_reader(fd)
            loop.remove_reader(sentinel)
            self._relay.finish()
        self._read_all()
        self._reap()
        return b"".join(self._chunks)

    def _read(self) -> None:
        with contextlib.suppress(BlockingIOError, OSError):
            chunk = os.read(self._output.fileno(), _READ)
            if chunk:
                self._chunks.append(chunk)

    def _read_all(self) -> None:
        with contextlib.suppress(BlockingIOError, OSError):
            while chunk := os.read(self._output.fileno(), _READ):
                self._chunks.append(chunk)

    def _reap(self) -> None:
        self.process.join()
        self.exitcode = self.process.exitcode

    async def stop(self, events: EventLog) -> None:
        """SIGTERM, SIGKILL after ``KILL_AFTER`` s; return once the child has exited."""
        if self.exitcode is not None or self._closed:
            return
        loop = asyncio.get_running_loop()
        exited: asyncio.Future[None] = loop.create_future()
        sentinel = self.process.sentinel
        loop.add_reader(sentinel, _settle, exited)
        try:
            self.process.terminate()
            try:
                await asyncio.wait_for(asyncio.shield(exited), KILL_AFTER)
            except asyncio.TimeoutError:
                events.log(
                    logger,
                    EventName.JOB_CHILD_KILLED,
                    logging.WARNING,
                    "isolated child %s ignored SIGTERM for %s s; killing it",
                    self.pid,
                    KILL_AFTER,
                )
                self.process.kill()
                await exited
        finally:
            loop.remove_reader(sentinel)
            if self.process.exitcode is None:  # interrupted while waiting: never leave it behind
                self.process.kill()
            self._reap()

    def close(self) -> None:
        if self._closed:
            return
        if self.exitcode is None:
            self.process.kill()
            self._reap()
        self._closed = True
        self._output.close()
        self._lifeline.close()
        self._progress.close()
        self._journal.close()
        self.process.close()


def _settle(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)


def _outcome(output: bytes, exitcode: int | None, pid: int | None) -> str | None:
    record: dict[str, Any] | None = None
    with contextlib.suppress(ValueError):
        loaded = json.loads(output)
        record = loaded if isinstance(loaded, dict) else None
    if record is not None and "result" in record:
        result = record["result"]
        return result if isinstance(result, str) else None
    if record is not None and "error" in record:
        raise _rebuilt(record["error"])
    if exitcode is not None and exitcode < 0:
        try:
            name = signal.Signals(-exitcode).name
        except ValueError:
            name = f"signal {-exitcode}"
        raise ExecutionFailed(f"child process {pid} was killed by signal {name}")
    raise ExecutionFailed(f"child process {pid} exited with code {exitcode} and no result")


def _rebuilt(error: dict[str, Any]) -> BaseException:
    """The child's exception in the worker: an outcome signal, a park or ``InvalidResult`` as
    itself, anything else as a ``ChildFailed`` named after the original."""
    message = str(error.get("message", ""))
    signal_ = error.get("signal")
    failure: Exception
    if signal_ == "retry":
        failure = Retry(error.get("delay"))
    elif signal_ == "snooze":
        failure = Snooze(error.get("delay") or 0.0)
    elif signal_ == "fail":
        failure = Fail(message)
    elif signal_ == "invalid_result":
        failure = InvalidResult(message)
    elif signal_ == "parked":
        return Parked(datetime.fromisoformat(str(error["until"])), error.get("waiting_for"))
    else:
        module, _, qualname = str(error.get("type", "builtins.Exception")).rpartition(".")
        namespace: dict[str, Any] = {"__module__": module or "builtins", "__qualname__": qualname}
        if error.get("code"):
            namespace["code"] = str(error["code"])
        namespace["lineage"] = tuple(str(name) for name in error.get("lineage", ()))
        kind = type(qualname.rpartition(".")[2] or "Exception", (ChildFailed,), namespace)
        failure = kind(message)
    failure.__cause__ = ChildTraceback(str(error.get("traceback", "")))
    return failure
