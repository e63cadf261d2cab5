"""Where rota reads the time: a ``Clock`` protocol, the system clock, the system clock kept on the
database server's time line, and a fake one for tests."""

from __future__ import annotations

import time
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from typing import Protocol, runtime_checkable


@runtime_checkable
class Clock(Protocol):
    """Anything with ``now()`` returning an aware UTC ``datetime``."""

    def now(self) -> datetime: ...


class SystemClock:
    def now(self) -> datetime:
        return datetime.now(timezone.utc)


DRIFT = 1e-4
"""How fast, at most, this host's monotonic clock is taken to drift from the server's (100 ppm,
an undisciplined crystal's worst): a reading's uncertainty grows by this much per second."""


@dataclass(frozen=True, slots=True)
class ClockReading:
    """The server's clock, ``remote``, read between the monotonic instants ``sent`` and
    ``received``: it stands for the round trip's midpoint, off by at most half of it."""

    remote: datetime
    sent: float
    received: float

    @property
    def midpoint(self) -> float:
        return (self.sent + self.received) / 2

    def uncertainty(self, at: float) -> float:
        """Seconds this reading may be off by at the monotonic instant ``at``."""
        return (self.received - self.sent) / 2 + DRIFT * abs(at - self.midpoint)

    def now(self, at: float) -> datetime:
        """The server's time at the monotonic instant ``at``, by this reading."""
        return self.remote + timedelta(seconds=at - self.midpoint)


class DatabaseClock:
    """The system clock, kept on one time line with every other host: the database server's.

    A lease is written by one host and compared by another, so a host whose clock is stepped
    (NTP, an operator, a resumed VM) would see live leases as expired, or write expired ones.
    Once given a reading of the server's clock, this clock reads the server's time by it: the
    reading plus the monotonic time elapsed since, which no step of the wall clock moves.  Of
    the readings given, it keeps the one it is surest of (the shortest round trip, allowing
    for drift since), so that one slow round trip cannot move the line by half its length;
    a reading that disagrees with it beyond both uncertainties (the server's clock was set,
    this host slept) replaces it.  Until the first one it reads ``host``.
    """

    def __init__(self, host: Clock | None = None) -> None:
        self.host: Clock = host or SystemClock()
        self.reading: ClockReading | None = None

    def now(self) -> datetime:
        reading = self.reading
        if reading is None:
            return self.host.now()
        return reading.now(time.monotonic())

    def anchor(self, reading: ClockReading) -> None:
        kept = self.reading
        at = reading.midpoint
        if kept is not None and kept.uncertainty(at) < reading.uncertainty(at):
            apart = abs((reading.remote - kept.now(at)).total_seconds())
            if apart <= kept.uncertainty(at) + reading.uncertainty(at):
                return
        self.reading = reading


class FakeClock:
    """A clock that moves only when told to, so tests never sleep.

    >>> clock = FakeClock(datetime(2026, 1, 1, tzinfo=timezone.utc))
    >>> clock.advance(90)
    >>> clock.now().minute
    1
    """

    def __init__(self, start: datetime | None = None) -> None:
        self._now = as_utc(start) if start is not None else datetime.now(timezone.utc)

    def now(self) -> datetime:
        return self._now

    def advance(self, delta: float | timedelta) -> None:
        step = delta if isinstance(delta, timedelta) else timedelta(seconds=delta)
        if step < timedelta(0):
            raise ValueError("a clock does not go backwards; use set() to jump")
        self._now += step

    def set(self, moment: datetime) -> None:
        self._now = as_utc(moment)


def as_utc(moment: datetime) -> datetime:
    """Aware UTC ``datetime``; a naive one is taken to be UTC already."""
    if moment.tzinfo is None:
        return moment.replace(tzinfo=timezone.utc)
    return moment.astimezone(timezone.utc)


def on_time_line(clock: Clock | None) -> Clock:
    """The system clock (the default) kept on the database server's time line
    (``runtime.timeline``); any other clock, a test's, as it is."""
    if clock is None or isinstance(clock, SystemClock):
        return DatabaseClock(clock)
    return clock
