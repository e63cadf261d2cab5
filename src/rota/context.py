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
from datetime import datetime

from rota.core.model import Progress
from rota.errors import InvalidArguments

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
    on_progress: Callable[[Progress], None] | None = field(default=None, repr=False, compare=False)
    """Where ``progress`` hands each valid value: the worker's ``ProgressBoard``.  ``None`` in
    a context made by hand (a unit test of a handler), where ``progress`` only checks."""

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
