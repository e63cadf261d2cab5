from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rota.core import payload
from rota.core.clock import FakeClock, SystemClock
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
