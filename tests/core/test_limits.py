"""Rate windows: epoch-aligned, refilled when a new one begins, never spent from the future."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest

from rota.core.limits import parse_rate
from rota.errors import ConfigError

T0 = datetime(2026, 3, 2, 12, 0, 0, tzinfo=timezone.utc)
SECOND = timedelta(seconds=1)


def test_a_window_is_epoch_aligned() -> None:
    rate = parse_rate("100/m", "t")
    assert rate.window(T0 + 59.9 * SECOND) == T0
    assert rate.window(T0 + 60 * SECOND) == T0 + 60 * SECOND


def test_tokens_refill_when_the_rows_window_is_over_and_cap_at_the_count() -> None:
    rate = parse_rate("20/s", "t")
    assert rate.available(None, None, T0) == 20
    assert rate.available(3.0, T0, T0 + 0.5 * SECOND) == 3
    assert rate.available(0.0, T0, T0 + SECOND) == 20, "a new window"
    assert rate.available(50.0, T0, T0) == 20, "a lowered limit applies at once"


def test_a_claim_behind_the_rows_window_gets_nothing() -> None:
    """Its ``now`` predates the window another claim opened: starting jobs on that window's
    tokens would record them in the earlier window, over its limit."""
    rate = parse_rate("20/s", "t")
    assert rate.available(10.0, T0 + SECOND, T0 + 0.99 * SECOND) == 0


@pytest.mark.parametrize("spec", ["0/s", "5/d", "x/s", "1.5/m", 20])
def test_a_bad_rate_is_a_config_error(spec: object) -> None:
    with pytest.raises(ConfigError):
        parse_rate(spec, "t")
