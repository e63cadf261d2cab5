"""JobContext: what a handler knows about the attempt it runs, and how it learns to stop."""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass, field
from datetime import datetime


class Cancellation(threading.Event):
    """Set when the attempt should stop; truthy exactly then, so ``if ctx.cancelled:`` reads
    as it should.  ``wait(timeout)`` and ``is_set()`` work as on any ``threading.Event``."""

    def __bool__(self) -> bool:
        return self.is_set()

    def __repr__(self) -> str:
        return f"Cancellation(set={self.is_set()})"


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
    logger: logging.LoggerAdapter[logging.Logger]
    cancelled: Cancellation = field(default_factory=Cancellation)
