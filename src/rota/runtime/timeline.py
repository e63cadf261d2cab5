"""Leases on one time line: this process's clock kept on the database server's.

A lease is written by one host (a claim, a heartbeat) and compared by another (a rescue), so
both must read one clock, and no host's own clock is one: NTP steps it, an operator sets it, a
VM resumes with it behind.  With the system clock, a ``Rota`` reads a ``DatabaseClock``, which
``TimeLine.measure`` anchors to the server's clock: at connect, at every heartbeat of a worker,
and at least every ``REMEASURE`` seconds in a process without one (``stale``).  Between two
readings it follows the monotonic clock, so a step of the host's wall clock moves nothing.
Where the database has no clock of its own (SQLite, whose processes share this host's) the
host's clock is the line; a fake or custom clock (tests) is used as it is.
"""

from __future__ import annotations

import logging
import time
from datetime import timedelta

from rota.core.clock import Clock, DatabaseClock
from rota.core.events import EventName
from rota.observe.events import EventLog
from rota.store.base import Store

SKEW_WARNING = timedelta(seconds=5)
"""How far this host's clock may be from the server's before a worker says so."""
REMEASURE = 3600.0
logger = logging.getLogger("rota")


class TimeLine:
    def __init__(self, store: Store, clock: Clock, events: EventLog) -> None:
        self.store = store
        self.clock = clock
        self.events = events
        self._warned: timedelta | None = None
        """The skew last warned of, so that a steady skew is reported once, not per beat."""

    def measure(self, readings: int = 1) -> timedelta | None:
        """Read the server's clock ``readings`` times (the clock keeps the best reading), and
        return how far this host's wall clock reads ahead of the line (``None``: nothing to
        measure).  A skew beyond ``SKEW_WARNING``, or a step of that size since the last
        warning, is logged."""
        clock = self.clock
        if not isinstance(clock, DatabaseClock):
            return None
        for _ in range(readings):
            reading = self.store.server_clock()
            if reading is None:
                return None
            clock.anchor(reading)
        skew = clock.host.now() - clock.now()
        self._warn(skew)
        return skew

    def stale(self) -> bool:
        """Whether a process without a worker should measure again."""
        clock = self.clock
        if not isinstance(clock, DatabaseClock) or clock.reading is None:
            return False
        return time.monotonic() - clock.reading.received > REMEASURE

    def _warn(self, skew: timedelta) -> None:
        warned = self._warned
        if abs(skew) <= SKEW_WARNING and (warned is None or abs(warned) <= SKEW_WARNING):
            return
        if warned is not None and abs(skew - warned) <= SKEW_WARNING:
            return
        self._warned = skew
        if abs(skew) <= SKEW_WARNING:
            self.events.log(
                logger,
                EventName.WORKER_CLOCK_SKEW,
                logging.INFO,
                "this host's clock is back within %.1f s of the database server's",
                abs(skew.total_seconds()),
                skew_seconds=skew.total_seconds(),
            )
            return
        self.events.log(
            logger,
            EventName.WORKER_CLOCK_SKEW,
            logging.WARNING,
            "this host's clock is %.1f s %s the database server's; rota keeps its leases and "
            "times on the server's clock, but keep clocks in sync (NTP): handlers and logs "
            "read this host's",
            abs(skew.total_seconds()),
            "ahead of" if skew > timedelta(0) else "behind",
            skew_seconds=skew.total_seconds(),
        )
