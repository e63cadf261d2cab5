"""The schedules' protocol: ticks become jobs only through ``fire``, once each."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Protocol

from rota.core.model import NewJob
from rota.core.overlap import Decision
from rota.core.schedule_edits import Edit
from rota.core.schedules import Schedule, ScheduleChange, ScheduleSpec, ScheduleState, ScheduleStats


class ScheduleStore(Protocol):
    """Schedules by name; ``fire`` is the only way ticks become jobs.  Every change of a
    schedule is written with its history entry, in one transaction, by ``actor``."""

    def upsert(
        self, spec: ScheduleSpec, first_run: datetime, now: datetime, actor: str
    ) -> tuple[Schedule | None, Edit | None]:
        """Create by name or update the definition (``core.schedule_edits.sync``); a changed
        cron or tz, or a disabled schedule coming back, restarts at ``first_run``.  Never
        creates a second row.  The schedule now, and the change made, if any; ``(None,
        None)`` when the row of that name cannot be read, which is left as it is."""
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

    def due(self, now: datetime, limit: int) -> list[Schedule]:
        """Active schedules whose ``next_run_at <= now``, earliest first, leaving out the rows
        that cannot be read (each logged once)."""
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
