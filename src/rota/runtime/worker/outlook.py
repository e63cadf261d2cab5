"""The latest outlook of an idle worker (``store.outlook``), shared by the loops it spares.

While the claim loop finds nothing, it asks the database one question a poll (``Store.outlook``:
a job due? a lease expired? the next tick?) instead of claiming, and hands the answer here.
The rescue loop and the scheduler, which would each query at every poll too, read the answer
instead while it is fresh, and are woken by it when it says they have work; when no fresh
answer exists (the claim loop is busy claiming, or waiting for a free slot) they query for
themselves, as they always did.  So an idle worker sends one statement a poll, and a busy one
pays nothing more than before.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta

from rota.core.clock import Clock
from rota.store.values import Outlook

FRESH_POLLS = 1.5
"""An outlook is fresh for this many polls: the next one is due within one."""


class SharedOutlook:
    """The idle claim loop's latest ``Outlook``, for the loops that would otherwise ask too."""

    def __init__(self, clock: Clock, poll_interval: float) -> None:
        self.clock = clock
        self.max_age = timedelta(seconds=poll_interval * FRESH_POLLS)
        self.latest: Outlook | None = None
        self._listeners: list[Callable[[Outlook], None]] = []

    def listen(self, listener: Callable[[Outlook], None]) -> None:
        self._listeners.append(listener)

    def heard(self, outlook: Outlook) -> None:
        self.latest = outlook
        for listener in self._listeners:
            listener(outlook)

    def fresh(self) -> Outlook | None:
        """The latest outlook, if it is recent enough to stand for a query of one's own."""
        latest = self.latest
        if latest is None or self.clock.now() - latest.at > self.max_age:
            return None
        return latest
