"""The schedules' protocol: ticks become jobs only through ``fire_due`` and ``fire``, once each."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from typing import Protocol, TypeAlias

from rota.core.model import NewJob
from rota.core.overlap import Decision
from rota.core.schedule_edits import Edit
from rota.core.schedules import Schedule, ScheduleChange, ScheduleSpec, ScheduleState, ScheduleStats
from rota.store.values import Firings

Planner: TypeAlias = Callable[[Schedule], tuple[datetime, Sequence[NewJob]] | None]
"""A due schedule's next run and the jobs of its ticks; ``None`` leaves the schedule as it is."""


class ScheduleStore(Protocol):
    """Schedules by name; ``fire_due`` (and ``fire``, its one-schedule form) is the only way
    ticks become jobs.  Every change of a schedule is written with its history entry, in one
    transaction, by ``actor``."""

    def upsert(
        self, spec: ScheduleSpec, first_run: datetime, now: datetime, actor: str
    ) -> tuple[Schedule | None, Edit | None]:
        """Create by name or update the definition (``core.schedule_edits.sync``); a changed
        cron or tz, or a disabled schedule coming back, restarts at ``first_run``.  Never
        creates a second row.  The schedule now, and the change made, if any; ``(None,
        None)`` when the row of that name cannot be read, which is left as it is."""
        ...

    def upsert_many(
        self, specs: Sequence[tuple[ScheduleSpec, datetime]], now: datetime, actor: str
    ) -> dict[str, Edit]:
        """``upsert`` each schedule with its first run, many a transaction (code's schedules at
        start: 10,000 of them take seconds, not minutes): the changes made by name, creations
        aside."""
        ...

    def change(
        self, name: str, version: int, edit: Edit, actor: str, now: datetime
    ) -> Schedule | None:
        """Apply ``edit`` if the schedule is live and still at ``version``; else ``None``."""
        ...

    def get(self, name: str) -> Schedule | None:
        """The schedule; ``StoreError`` when its row cannot be read (``UnreadableRow``)."""
        ...

    def all(self, states: Sequence[ScheduleState] = ()) -> list[Schedule]:
        """By name, leaving out the rows that cannot be read (each logged once)."""
        ...

    def fire_due(self, now: datetime, limit: int, planner: Planner) -> Firings:
        """Take up to ``limit`` active schedules whose ``next_run_at <= now``, earliest first,
        skipping those another instance is firing, and fire each as ``planner`` gives its next
        run and tick jobs (as ``fire`` does), all in one transaction; a schedule ``planner``
        gives ``None`` for, or whose row cannot be read (logged once), is left as it is.
        Replicas take disjoint batches rather than waiting on each other's rows."""
        ...

    def next_due(self) -> datetime | None: ...

    def fire(
        self, schedule: Schedule, next_run: datetime, jobs: Sequence[NewJob], now: datetime
    ) -> Decision | None:
        """Insert the tick jobs the schedule's overlap policy lets through and advance
        ``next_run_at`` if it still equals the value read, in one transaction: what was
        decided (``rota.core.overlap``).  Ticks skipped are recorded in the history; ``queue``
        ticks are linked to the unfinished runs they wait for.

        ``None`` means another instance fired first; nothing is written and nothing raised.
        A job whose ``(schedule, scheduled_at)`` already exists is skipped.
        """
        ...

    def set_state(
        self,
        name: str | None,
        target: ScheduleState,
        sources: Sequence[ScheduleState],
        now: datetime,
        actor: str,
        next_runs: Mapping[str, datetime] | None = None,
    ) -> int: ...

    def resume(self, next_runs: Mapping[str, datetime], now: datetime, actor: str) -> int: ...

    def disable(self, names: Sequence[str], now: datetime, actor: str = "code") -> int: ...

    def history_of(self, name: str, limit: int | None = None) -> list[ScheduleChange]:
        """The schedule's changes, newest first."""
        ...

    def prune_history(self, before: datetime, limit: int) -> int:
        """Delete up to ``limit`` history entries older than ``before``; how many."""
        ...

    def record_tick(self, name: str, failed: bool, threshold: int) -> str | None:
        """Count a finished tick: ``"failing"`` when it makes ``threshold`` failures in a row,
        ``"recovered"`` when a success ends a failing run; once per flip across the cluster."""
        ...

    def stats(self, since: datetime) -> dict[str, ScheduleStats]:
        """Every schedule's ``ScheduleStats``, runs and failures counted over the ticks
        scheduled at or after ``since``."""
        ...
