"""Which ticks of a schedule to enqueue now, and which were missed while nobody was running.

A tick found later than ``misfire_grace`` after its time is *missed*.  Missed ticks are skipped
and counted, or with ``catchup`` the latest ``max_missed`` of them run.  The planner never looks
further back than ``MAX_TICKS`` ticks, so a year-long outage costs a bounded amount of work.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from datetime import datetime, timedelta

from rota.core.cron import Cron

MAX_TICKS = 100_000


@dataclass(frozen=True, slots=True)
class Plan:
    """``ticks`` to enqueue (caught-up missed ones first); ``missed`` counts every tick found
    late, ``caught_up`` those of them that run anyway."""

    ticks: tuple[datetime, ...]
    next_run: datetime
    missed: int = 0
    caught_up: int = 0
    capped: bool = False

    @property
    def skipped(self) -> int:
        return self.missed - self.caught_up


def plan(
    cron: Cron,
    next_run: datetime,
    now: datetime,
    *,
    misfire_grace: timedelta,
    catchup: bool,
    max_missed: int,
) -> Plan:
    """Plan the ticks in ``[next_run, now]``; ``next_run`` is the first tick not yet handled."""
    if next_run > now:
        return Plan((), next_run)
    latest_missed: deque[datetime] = deque(maxlen=max_missed if catchup else 0)
    on_time: list[datetime] = []
    missed = 0
    tick = next_run
    for _ in range(MAX_TICKS):
        if tick > now:
            break
        if now - tick > misfire_grace:
            missed += 1
            latest_missed.append(tick)
        else:
            on_time.append(tick)
        tick = cron.next_after(tick)
    else:
        tick = cron.next_after(now)
        return Plan(tuple(on_time), tick, missed, capped=True)
    caught_up = tuple(latest_missed)
    return Plan(caught_up + tuple(on_time), tick, missed, len(caught_up))
