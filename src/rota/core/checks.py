"""What numbers and moments rota accepts: priorities, durations in seconds, and ``run_at``.

Each check names the setting and what it got, so a typo fails at the call that made it instead
of in a worker later (``priority="high"`` would be stored by SQLite and refused by every claim).
"""

from __future__ import annotations

import math
from datetime import datetime, timedelta, timezone

from rota.core.clock import as_utc
from rota.errors import RotaError

PRIORITY_RANGE = (-1000, 1000)
"""Lower runs first; the default is 0."""
EARLIEST = datetime(1000, 1, 1, tzinfo=timezone.utc)
LATEST = datetime(9999, 12, 31, tzinfo=timezone.utc)
"""MySQL's ``DATETIME`` range, the narrowest of the backends; every backend keeps to it."""


def check_priority(value: object, error: type[RotaError], name: str = "priority") -> int:
    low, high = PRIORITY_RANGE
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise error(f"{name} must be an int from {low} to {high}, got {value!r}")
    return value


def check_int(value: object, error: type[RotaError], name: str, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise error(f"{name} must be an int of at least {minimum}, got {value!r}")
    return value


def seconds(value: object, error: type[RotaError], name: str, *, positive: bool = False) -> float:
    """A finite number of seconds (``timedelta`` accepted), at least zero or above it."""
    if isinstance(value, timedelta):
        value = value.total_seconds()
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise error(f"{name} must be a number of seconds or a timedelta, got {value!r}")
    number = float(value)
    if not math.isfinite(number) or number < 0 or (positive and number == 0):
        bound = "positive" if positive else "at least 0"
        raise error(f"{name} must be a finite number of seconds, {bound}, got {value!r}")
    return number


def duration(
    value: object, error: type[RotaError], name: str, *, positive: bool = False
) -> timedelta:
    """``seconds`` as a ``timedelta``, refusing what ``timedelta`` cannot hold."""
    number = seconds(value, error, name, positive=positive)
    try:
        return timedelta(seconds=number)
    except OverflowError:
        raise error(f"{name} is too long: {value!r}") from None


def moment(value: object, error: type[RotaError], name: str) -> datetime:
    """An aware UTC ``datetime`` within the range every backend stores (naive means UTC)."""
    if not isinstance(value, datetime):
        raise error(f"{name} must be a datetime, got {type(value).__name__}")
    try:
        utc = as_utc(value)
    except (OverflowError, ValueError):
        raise error(f"{name} {value!r} is outside the years 1000 to 9999") from None
    if not EARLIEST <= utc <= LATEST:
        raise error(f"{name} {value!r} is outside the years 1000 to 9999")
    return utc


def later(now: datetime, delay: object, error: type[RotaError]) -> datetime:
    """``now`` plus ``delay`` seconds (or a ``timedelta``), refused if it leaves the range."""
    step = duration(delay, error, "delay")
    try:
        return moment(now + step, error, "run_at")
    except OverflowError:
        raise error(f"delay {delay!r} puts run_at past the year 9999") from None
