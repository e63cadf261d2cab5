"""JobContext: what a handler knows about the attempt it runs, how it learns to stop, and how it
says how far it is.

``ctx.progress`` is called from handler code, often in a tight loop and from a sync handler's
thread: it only checks the value and hands it on (``on_progress``, set by the worker), never
touching the database.  The worker keeps the latest value per attempt and writes it with its
next heartbeat, so a thousand calls cost no more writes than one.
"""

from __future__ import annotations

import logging
import math
import numbers
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, Protocol

from rota.core.model import Progress
from rota.errors import ConfigError, InvalidArguments

MAX_PROGRESS_NOTE = 255
"""Characters a progress note keeps (the column's width); a longer one is cut, not refused: a
note is for people, and a long file name in it should not fail the job."""


class Cancellation(threading.Event):
    """Set when the attempt should stop; truthy exactly then, so ``if ctx.cancelled:`` reads
    as it should.  ``wait(timeout)`` and ``is_set()`` work as on any ``threading.Event``."""

    def __bool__(self) -> bool:
        return self.is_set()

    def __repr__(self) -> str:
        return f"Cancellation(set={self.is_set()})"


def checked_progress(fraction: object, note: object = None) -> Progress:
    """``ctx.progress``'s arguments as a ``Progress``, or ``InvalidArguments`` naming the fault.

    A note is stored as given (the CLI and the dashboard escape it when they show it), cut to
    ``MAX_PROGRESS_NOTE`` characters; a NUL or a lone surrogate is refused, since PostgreSQL
    and UTF-8 cannot store them and the heartbeat that carries the note must not fail.
    """
    if isinstance(fraction, bool) or not isinstance(fraction, numbers.Real):
        raise InvalidArguments(f"progress must be a number from 0 to 1, got {fraction!r}")
    value = float(fraction)
    if not (math.isfinite(value) and 0.0 <= value <= 1.0):
        raise InvalidArguments(f"progress must be a number from 0 to 1, got {fraction!r}")
    if note is None:
        return Progress(value, None)
    if not isinstance(note, str):
        raise InvalidArguments(f"a progress note must be a str or None, got {type(note).__name__}")
    note = note[:MAX_PROGRESS_NOTE]
    if "\x00" in note:
        raise InvalidArguments("a progress note cannot hold a NUL character")
    try:
        note.encode("utf-8")
    except UnicodeEncodeError:
        raise InvalidArguments("a progress note cannot hold a lone surrogate") from None
    return Progress(value, note)


class Workflow(Protocol):
    """What ``ctx.step`` and ``ctx.sleep`` hand their calls to: the worker's journal of the
    attempt (``rota.runtime.worker.journal``)."""

    def step(
        self, name: str, fn: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> Any: ...

    def sleep(self, name: str, duration: float | timedelta) -> Any: ...

    def wait_for(self, signal: str, timeout: float | timedelta | None) -> Any: ...


@dataclass
class JobContext:
    """Passed as the first argument of every handler that declares parameters.

    ``cancelled`` is set when the attempt times out, the job is cancelled or the worker shuts
    down; a sync handler should check it, since a thread cannot be killed.  Async handlers are
    cancelled with ``asyncio.CancelledError`` as well.
    """

    job_id: int
    task: str
    queue: str
    attempt: int
    scheduled_at: datetime | None
    """The tick a scheduled job runs for, or the moment a manual run was asked for (``manual``);
    ``None`` for a job queued otherwise."""
    logger: logging.LoggerAdapter[logging.Logger]
    cancelled: Cancellation = field(default_factory=Cancellation)
    manual: bool = False
    """A run of the schedule asked for by hand (``run_now``, the CLI, the dashboard, the API)."""
    batch: int | None = None
    """The batch (``rota.batch``) the job belongs to, as one of its jobs or a callback."""
    on_progress: Callable[[Progress], None] | None = field(default=None, repr=False, compare=False)
    """Where ``progress`` hands each valid value: the worker's ``ProgressBoard``.  ``None`` in
    a context made by hand (a unit test of a handler), where ``progress`` only checks."""
    workflow: Workflow | None = field(default=None, repr=False, compare=False)
    """Where ``step`` and ``sleep`` save what they did; ``None`` in a context made by hand."""

    def progress(self, fraction: float, note: str | None = None) -> None:
        """Record how far the attempt is: ``fraction`` from 0 to 1 and an optional short note.

        Written with the worker's next heartbeat, the last value before it winning; never a
        write per call, so call it as often as is convenient.  Safe from any thread.  A bad
        value raises ``InvalidArguments`` here, in the handler; the value is kept on the job
        after it finishes, and a new attempt starts without one.
        """
        value = checked_progress(fraction, note)
        if self.on_progress is not None:
            self.on_progress(value)

    def step(self, name: str, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Any:
        """Run ``fn(*args, **kwargs)`` once for this job, as the step ``name``, and return its
        result. The JSON result is saved, fenced by the job's lease, before this returns; when
        the job runs again (a retry, a resume after ``sleep``) the step returns the saved
        result without calling ``fn``. A name used again in the same run is numbered by
        occurrence (``name``, ``name#2``, ...). In an async handler, ``await`` it (``fn`` may
        be sync or async). The code between steps runs again on every resume: side effects
        belong in steps."""
        return self._workflow("step").step(name, fn, args, kwargs)

    def sleep(self, name: str, duration: float | timedelta) -> Any:
        """Sleep ``duration`` (seconds or a ``timedelta``) durably: the first time, record when
        the sleep ends and end the attempt there, the job pending until then with no attempt
        spent and no worker held; when the job runs again after that moment, return at once.
        In an async handler, ``await`` it."""
        return self._workflow("sleep").sleep(name, duration)

    def wait_for(self, signal: str, timeout: float | timedelta | None = None) -> Any:
        """The payload of the first signal named ``signal`` sent to this job (``rota.signal``)
        that no earlier wait took, sent before this call or after: if none is there yet, end
        the attempt here and park the job ``waiting`` (no attempt spent, no worker held) until
        one arrives or ``timeout`` passes, and return ``None`` after a timeout. A wait is a
        step: once it returned, a later run gets the same payload at once. In an async
        handler, ``await`` it."""
        return self._workflow("wait_for").wait_for(signal, timeout)

    def _workflow(self, call: str) -> Workflow:
        if self.workflow is None:
            raise ConfigError(
                f"ctx.{call} needs a job run by a rota worker (or rota.drain): this context "
                "has no journal to save steps in"
            )
        return self.workflow
