"""Where rota reads the time: a ``Clock`` protocol, the system clock and a fake one for tests."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from typing import Protocol, runtime_checkable


@runtime_checkable
class Clock(Protocol):
    """Anything with ``now()`` returning an aware UTC ``datetime``."""

    def now(self) -> datetime: ...


class SystemClock:
    def now(self) -> datetime:
        return datetime.now(timezone.utc)


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


def offset(sent: datetime, remote: datetime, received: datetime) -> timedelta:
    """How far a remote clock reads ahead of ours, taking its reading as the round trip's
    midpoint (the error is at most half the round trip)."""
    return remote - (sent + (received - sent) / 2)
