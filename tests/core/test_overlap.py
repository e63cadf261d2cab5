"""The overlap decision, pure: what a pass does with its planned ticks given the schedule's
unfinished runs."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest

from rota.core.overlap import Decision, Overlap, decide, overlap_policy
from rota.errors import ConfigError

T0 = datetime(2026, 1, 1, tzinfo=timezone.utc)
T1, T2 = T0 + timedelta(minutes=1), T0 + timedelta(minutes=2)


def test_skip_lets_the_first_tick_through_only_when_nothing_is_unfinished() -> None:
    assert decide(Overlap.SKIP, [T0], []) == Decision((T0,))
    assert decide(Overlap.SKIP, [T0, T1, T2], []) == Decision((T0,), (T1, T2))
    assert decide(Overlap.SKIP, [T0, T1], [7]) == Decision((), (T0, T1), (7,))


def test_queue_enqueues_every_tick_chained_behind_the_unfinished_runs() -> None:
    assert decide(Overlap.QUEUE, [T0, T1], [9, 7]) == Decision((T0, T1), (), (7, 9), True)


def test_allow_enqueues_every_tick_and_no_tick_decides_nothing() -> None:
    assert decide(Overlap.ALLOW, [T0, T1], [7]) == Decision((T0, T1), (), (7,))
    assert decide(Overlap.SKIP, [], [7]) == Decision((), (), (7,))


@pytest.mark.parametrize("value", ["sometimes", "", None, 1, "SKIP"])
def test_only_the_three_names_are_policies(value: object) -> None:
    with pytest.raises(ConfigError, match="overlap must be one of allow, skip, queue"):
        overlap_policy(value, ConfigError)
    assert overlap_policy("queue", ConfigError) is Overlap.QUEUE
