"""Schedules as every layer sees them: a definition (``ScheduleSpec``), the persisted rule with
its run state (``Schedule``), the changes its history records, and what the jobs table says of
its runs."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from enum import Enum
from typing import Any

from rota.core.overlap import DEFAULT, Overlap


class ScheduleState(str, Enum):
    ACTIVE = "active"
    PAUSED = "paused"
    DISABLED = "disabled"
    CANCELLED = "cancelled"

    def __str__(self) -> str:
        return self.value


class ScheduleSource(str, Enum):
    """Who owns the definition: code (``@task(cron=...)``) or a ``Rota.schedule()`` call."""

    CODE = "code"
    RUNTIME = "runtime"


@dataclass(frozen=True, slots=True)
class ScheduleSpec:
    """A schedule's definition, as code or ``Rota.schedule()`` gives it."""

    name: str
    task: str
    cron: str
    tz: str
    payload: str
    queue: str
    priority: int
    source: ScheduleSource
    overlap: Overlap = DEFAULT
    """Whether a tick may start while a previous run is unfinished (``rota.core.overlap``)."""


@dataclass(frozen=True, slots=True)
class Schedule:
    """A persisted cron rule; ``name`` is its public id, ``spec.cron``/``tz`` the rule in force;
    while a code schedule is overridden, ``code_cron``/``code_tz``/``code_overlap`` keep what the
    code says (an override covers the rule and the overlap policy together).
    ``version`` grows with every change of the rule, so that edits are compare-and-set."""

    spec: ScheduleSpec
    state: ScheduleState
    next_run_at: datetime
    last_run_at: datetime | None
    created_at: datetime
    updated_at: datetime
    code_cron: str | None = None
    code_tz: str | None = None
    code_overlap: Overlap | None = None
    version: int = 0
    failures: int = 0
    """Ticks in a row whose job failed (``alert_after_failures``)."""
    failing: bool = False

    @property
    def name(self) -> str:
        return self.spec.name

    @property
    def overridden(self) -> bool:
        return self.code_cron is not None


class ScheduleAction(str, Enum):
    """The kinds of change a schedule's history records."""

    CREATED = "created"
    UPDATED = "updated"
    OVERRIDDEN = "overridden"
    RESET = "reset"
    PAUSED = "paused"
    RESUMED = "resumed"
    CANCELLED = "cancelled"
    DISABLED = "disabled"
    OVERRIDE_CLEARED = "override_cleared"
    SKIPPED = "skipped"
    """A tick that enqueued nothing: a previous run was unfinished (``overlap="skip"``)."""

    def __str__(self) -> str:
        return self.value


@dataclass(frozen=True, slots=True)
class ScheduleChange:
    """One entry of a schedule's history: what changed, when, by whom.  ``old`` and ``new``
    hold the fields that changed (``cron``, ``tz``, ``state`` ...), before and after."""

    schedule: str
    at: datetime
    action: ScheduleAction
    actor: str
    old: Mapping[str, Any] | None = None
    new: Mapping[str, Any] | None = None


@dataclass(frozen=True, slots=True)
class ScheduleStats:
    """What the jobs table tells of one schedule: ``runs`` (ticks started) and ``failures``
    among the ticks of the last ``FINISHED_WINDOW``, the jobs of its ticks ``running`` now, and
    when its newest started tick started (``last_run``), however old."""

    runs: int = 0
    failures: int = 0
    running: int = 0
    last_run: datetime | None = None
