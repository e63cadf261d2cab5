"""Which ticks run after downtime: misfire grace, skip by default, catch up the latest N."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

from rota.core.cron import Cron
from rota.core.planner import Plan, plan

T0 = datetime(2026, 3, 2, 9, 0, tzinfo=timezone.utc)
EVERY_MINUTE = Cron("* * * * *")
GRACE = timedelta(seconds=60)


def minutes(*offsets: int) -> tuple[datetime, ...]:
    return tuple(T0 + timedelta(minutes=n) for n in offsets)


def decide(now: datetime, catchup: bool = False, max_missed: int = 1) -> Plan:
    return plan(EVERY_MINUTE, T0, now, misfire_grace=GRACE, catchup=catchup, max_missed=max_missed)


def test_nothing_due_before_the_next_run() -> None:
    assert decide(T0 - timedelta(seconds=1)) == Plan((), T0)


def test_on_time_tick_runs() -> None:
    assert decide(T0 + timedelta(seconds=2)) == Plan(minutes(0), T0 + timedelta(minutes=1))


def test_a_tick_found_within_the_grace_still_runs() -> None:
    assert decide(T0 + timedelta(seconds=60)).ticks == minutes(0, 1)


def test_downtime_of_twelve_ticks_skips_them_and_counts_them() -> None:
    decided = decide(T0 + timedelta(minutes=12, seconds=10))
    assert decided.ticks == minutes(12)
    assert (decided.missed, decided.skipped, decided.caught_up) == (12, 12, 0)
    assert decided.next_run == T0 + timedelta(minutes=13)


def test_catch_up_runs_only_the_latest_missed_ticks() -> None:
    decided = decide(T0 + timedelta(minutes=12, seconds=10), catchup=True, max_missed=3)
    assert decided.ticks == minutes(9, 10, 11, 12)
    assert (decided.missed, decided.skipped, decided.caught_up) == (12, 9, 3)


def test_catch_up_with_no_budget_is_like_skipping() -> None:
    decided = decide(T0 + timedelta(minutes=5, seconds=30), catchup=True, max_missed=0)
    assert decided.ticks == minutes(5)
    assert decided.skipped == 5


def test_a_long_outage_costs_bounded_work() -> None:
    decided = decide(T0 + timedelta(days=400))
    assert decided.capped
    assert decided.next_run == T0 + timedelta(days=400, minutes=1)
