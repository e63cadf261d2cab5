from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rota.core import payload
from rota.core.clock import ClockReading, DatabaseClock, FakeClock, SystemClock
from rota.errors import InvalidArguments

json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.text()
    | st.floats(allow_nan=False, allow_infinity=False),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=10,
)


@given(args=st.lists(json_values, max_size=4), kwargs=st.dictionaries(st.text(), json_values))
def test_round_trip(args: list[object], kwargs: dict[str, object]) -> None:
    decoded = payload.decode(payload.encode(args, kwargs, trace="00-abc-def-01"))
    assert decoded == (tuple(args), kwargs, "00-abc-def-01")


@pytest.mark.parametrize(
    ("args", "kwargs", "named"),
    [
        ((object(),), {}, "positional argument 0"),
        ((), {"when": datetime.now()}, "keyword argument 'when'"),
        ((1, {1, 2}), {}, "positional argument 1"),
        ((float("nan"),), {}, "positional argument 0"),
    ],
)
def test_unserialisable_arguments_are_named(
    args: tuple[object, ...], kwargs: dict[str, object], named: str
) -> None:
    with pytest.raises(InvalidArguments, match=named) as info:
        payload.encode(args, kwargs)
    assert info.value.code == "INVALID_ARGUMENTS"


def test_size_limit() -> None:
    with pytest.raises(InvalidArguments, match="over the 100 limit"):
        payload.encode(["x" * 200], {}, max_bytes=100)


def test_fake_clock_moves_only_when_told() -> None:
    start = datetime(2026, 1, 1, tzinfo=timezone.utc)
    clock = FakeClock(start)
    assert clock.now() == start
    clock.advance(90)
    clock.advance(timedelta(minutes=1))
    assert clock.now() == start + timedelta(seconds=150)
    with pytest.raises(ValueError, match="backwards"):
        clock.advance(-1)
    clock.set(datetime(2027, 1, 1))
    assert clock.now() == datetime(2027, 1, 1, tzinfo=timezone.utc)


def test_system_clock_is_aware_utc() -> None:
    assert SystemClock().now().utcoffset() == timedelta(0)


class Monotonic:
    """A monotonic clock the test moves, standing in for ``time.monotonic``."""

    def __init__(self) -> None:
        self.value = 1000.0

    def __call__(self) -> float:
        return self.value


def reading(remote: datetime, sent: float, round_trip: float) -> ClockReading:
    """The server read ``remote`` halfway through a round trip begun at ``sent``."""
    return ClockReading(remote, sent, sent + round_trip)


def test_a_database_clock_reads_its_host_until_it_has_a_reading(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    host = FakeClock(datetime(2026, 1, 1, tzinfo=timezone.utc))
    clock = DatabaseClock(host)
    assert clock.now() == host.now()
    host.advance(5)
    assert clock.now() == host.now()


def test_a_database_clock_follows_the_monotonic_clock_whatever_its_host_does(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monotonic = Monotonic()
    monkeypatch.setattr("rota.core.clock.time.monotonic", monotonic)
    host = FakeClock(datetime(2026, 1, 1, tzinfo=timezone.utc))
    server = datetime(2026, 1, 1, 0, 0, 30, tzinfo=timezone.utc)
    clock = DatabaseClock(host)
    clock.anchor(reading(server, monotonic.value - 0.001, 0.002))  # read at its midpoint
    assert clock.now() == server
    host.set(host.now() - timedelta(seconds=120))  # the host's wall clock is stepped back
    monotonic.value += 7.5
    assert clock.now() == server + timedelta(seconds=7.5)
    host.set(host.now() + timedelta(seconds=240))  # and forward
    assert clock.now() == server + timedelta(seconds=7.5)


def test_a_database_clock_keeps_the_reading_it_is_surest_of() -> None:
    server = datetime(2026, 1, 1, tzinfo=timezone.utc)
    clock = DatabaseClock(FakeClock(server))
    good = reading(server, 100.0, 0.002)  # a 2 ms round trip: off by 1 ms at most
    clock.anchor(good)
    # A 1.2 s round trip 10 s later, whose midpoint reading is 0.5 s late but within its
    # own uncertainty: keeping it would move the line by half a second.
    slow = reading(server + timedelta(seconds=10.5), 109.4, 1.2)
    clock.anchor(slow)
    assert clock.reading is good
    # A quick one replaces it, and so does any once the drift since makes the kept one
    # less sure: after a day, 100 ppm is 8.6 s.
    quick = reading(server + timedelta(seconds=20.001), 120.0, 0.001)
    clock.anchor(quick)
    assert clock.reading is quick
    later = reading(server + timedelta(days=1, seconds=20), 120.0 + 86_400, 0.5)
    clock.anchor(later)
    assert clock.reading is later


def test_a_database_clock_takes_a_reading_that_disagrees_beyond_both_uncertainties() -> None:
    server = datetime(2026, 1, 1, tzinfo=timezone.utc)
    clock = DatabaseClock(FakeClock(server))
    clock.anchor(reading(server, 100.0, 0.002))
    # The server's clock was set 60 s ahead (or this host slept): the line follows it.
    stepped = reading(server + timedelta(seconds=70), 110.0, 0.05)
    clock.anchor(stepped)
    assert clock.reading is stepped
