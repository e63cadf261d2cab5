"""Cron parsing and next ticks: aliases, refusals, and DST rules pinned by named cases."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from zoneinfo import ZoneInfo

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rota.core.cron import Cron
from rota.errors import InvalidCron, InvalidTimezone

UTC = timezone.utc


@pytest.mark.parametrize(
    ("alias", "after", "expected"),
    [
        ("@hourly", datetime(2026, 1, 1, 10, 15), datetime(2026, 1, 1, 11, 0)),
        ("@daily", datetime(2026, 1, 1, 10, 15), datetime(2026, 1, 2, 0, 0)),
        ("@weekly", datetime(2026, 1, 1, 10, 15), datetime(2026, 1, 4, 0, 0)),
        ("@monthly", datetime(2026, 1, 1, 10, 15), datetime(2026, 2, 1, 0, 0)),
        ("@yearly", datetime(2026, 1, 1, 10, 15), datetime(2027, 1, 1, 0, 0)),
        ("@annually", datetime(2026, 1, 1, 10, 15), datetime(2027, 1, 1, 0, 0)),
    ],
)
def test_aliases(alias: str, after: datetime, expected: datetime) -> None:
    assert Cron(alias).next_after(after.replace(tzinfo=UTC)) == expected.replace(tzinfo=UTC)


@pytest.mark.parametrize(
    ("expression", "named"),
    [
        ("* * * * * *", "seconds field"),
        ("0 */5 * * * *", "seconds field"),
        ("61 * * * *", "minute"),
        ("* 24 * * *", "hour"),
        ("* * 32 * *", "day-of-month"),
        ("* * * 13 *", "month"),
        ("* * * * 8", "day-of-week"),
        ("* * * *", "expected 5"),
        ("@reboot", "unknown cron alias"),
        ("", "expected 5"),
        ("0 0 30 2 *", "day-of-month"),
    ],
)
def test_invalid_expressions_name_the_problem(expression: str, named: str) -> None:
    with pytest.raises(InvalidCron, match=named) as info:
        Cron(expression)
    assert info.value.code == "INVALID_CRON"


@pytest.mark.parametrize("name", ["Mars/Olympus", "", "../etc/passwd", "UTC+1"])
def test_unknown_time_zones_are_refused(name: str) -> None:
    with pytest.raises(InvalidTimezone, match="unknown time zone"):
        Cron("* * * * *", name)


def utc(year: int, month: int, day: int, hour: int, minute: int) -> datetime:
    return datetime(year, month, day, hour, minute, tzinfo=UTC)


DST_CASES = [
    pytest.param(
        "30 2 * * *",
        "America/New_York",
        utc(2026, 3, 8, 5, 0),
        [utc(2026, 3, 8, 7, 0), utc(2026, 3, 9, 6, 30)],
        id="new-york-spring-forward-skipped-tick-runs-once-right-after-the-gap",
    ),
    pytest.param(
        "30 2 * * *",
        "Europe/Berlin",
        utc(2026, 3, 28, 23, 0),
        [utc(2026, 3, 29, 1, 0), utc(2026, 3, 30, 0, 30)],
        id="berlin-spring-forward-skipped-tick-runs-once-right-after-the-gap",
    ),
    pytest.param(
        "30 1 * * *",
        "America/New_York",
        utc(2026, 11, 1, 4, 0),
        [utc(2026, 11, 1, 5, 30), utc(2026, 11, 2, 6, 30)],
        id="new-york-fall-back-repeated-tick-runs-once",
    ),
    pytest.param(
        "30 2 * * *",
        "Europe/Berlin",
        utc(2026, 10, 24, 23, 0),
        [utc(2026, 10, 25, 0, 30), utc(2026, 10, 26, 1, 30)],
        id="berlin-fall-back-repeated-tick-runs-once",
    ),
    pytest.param(
        "0 9 * * *",
        "Asia/Shanghai",
        utc(2026, 3, 8, 0, 0),
        [utc(2026, 3, 8, 1, 0), utc(2026, 3, 9, 1, 0)],
        id="shanghai-has-no-dst",
    ),
    pytest.param(
        "*/5 * * * *",
        "Asia/Shanghai",
        utc(2026, 3, 8, 0, 1),
        [utc(2026, 3, 8, 0, 5), utc(2026, 3, 8, 0, 10)],
        id="shanghai-every-five-minutes",
    ),
    pytest.param(
        "0 * * * *",
        "America/New_York",
        utc(2026, 11, 1, 4, 30),
        [utc(2026, 11, 1, 5, 0), utc(2026, 11, 1, 6, 0), utc(2026, 11, 1, 7, 0)],
        id="hourly-keeps-real-time-through-the-repeated-hour",
    ),
]


@pytest.mark.parametrize(("expression", "tz", "after", "expected"), DST_CASES)
def test_dst(expression: str, tz: str, after: datetime, expected: list[datetime]) -> None:
    ticks = Cron(expression, tz).ticks_after(after)
    assert [next(ticks) for _ in expected] == expected


def field(low: int, high: int, top: int | None = None) -> st.SearchStrategy[tuple[str, set[int]]]:
    """A cron field with values in [low, high] and the set of values it matches (a ``*``
    matches up to ``top``)."""
    every = st.just(("*", set(range(low, (top or high) + 1))))
    single = st.integers(low, high).map(lambda v: (str(v), {v}))
    listed = st.sets(st.integers(low, high), min_size=1, max_size=4).map(
        lambda vs: (",".join(map(str, sorted(vs))), vs)
    )
    stepped = st.integers(1, max(1, (high - low) // 2)).map(
        lambda n: (f"*/{n}", set(range(low, (top or high) + 1, n)))
    )
    return st.one_of(every, single, listed, stepped)


expressions = st.tuples(field(0, 59), field(0, 23), field(1, 28, top=31), field(1, 12))
moments = st.datetimes(
    min_value=datetime(2000, 1, 1), max_value=datetime(2090, 1, 1), timezones=st.just(UTC)
)


@settings(max_examples=300, deadline=None)
@given(fields=expressions, now=moments, tz=st.sampled_from(["UTC", "Asia/Shanghai"]))
def test_next_tick_is_after_now_and_matches(
    fields: tuple[tuple[str, set[int]], ...], now: datetime, tz: str
) -> None:
    (minute, minutes), (hour, hours), (day, days), (month, months) = fields
    cron = Cron(f"{minute} {hour} {day} {month} *", tz)
    tick = cron.next_after(now)
    local = tick.astimezone(ZoneInfo(tz))
    assert tick > now
    assert (local.second, local.microsecond) == (0, 0)
    assert local.minute in minutes and local.hour in hours
    assert local.day in days and local.month in months


@settings(max_examples=200, deadline=None)
@given(
    fields=expressions,
    now=moments,
    tz=st.sampled_from(["America/New_York", "Europe/Berlin", "Australia/Lord_Howe", "UTC"]),
)
def test_ticks_strictly_increase_even_across_dst(
    fields: tuple[tuple[str, set[int]], ...], now: datetime, tz: str
) -> None:
    (minute, _), (hour, _), (day, _), (month, _) = fields
    ticks = Cron(f"{minute} {hour} {day} {month} *", tz).ticks_after(now)
    previous = now
    for _ in range(20):
        tick = next(ticks)
        assert tick > previous
        assert tick.utcoffset() == timedelta(0)
        previous = tick
